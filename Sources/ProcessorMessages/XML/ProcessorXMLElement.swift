extension ProcessorXML {
    /// An element with its attributes, namespace declarations and children, editable in place.
    ///
    /// Children are addressed by local name and namespace URI, never by prefix, so an edit works
    /// whatever prefix the sender chose. Elements this type creates take the namespace and prefix of
    /// the element they are added to (see ``makeChild(_:text:)``).
    public struct Element: Sendable, Hashable {
        public var name: QualifiedName
        public var attributes: [Attribute]
        public var namespaceDeclarations: [NamespaceDeclaration]
        public var children: [Node]

        public init(
            name: QualifiedName,
            attributes: [Attribute] = [],
            namespaceDeclarations: [NamespaceDeclaration] = [],
            children: [Node] = []
        ) {
            self.name = name
            self.attributes = attributes
            self.namespaceDeclarations = namespaceDeclarations
            self.children = children
        }

        /// A new element in the same namespace (and with the same prefix) as this one, holding `text`.
        public func makeChild(_ localName: String, text: String? = nil) -> Element {
            let name = QualifiedName(namespaceURI: self.name.namespaceURI, prefix: self.name.prefix, localName: localName)
            return Element(name: name, children: text.map { [.text($0)] } ?? [])
        }

        // MARK: Reading

        /// The child elements, in order.
        public var childElements: [Element] { children.compactMap(\.element) }

        /// The concatenated text and CDATA content of the direct children.
        public var text: String {
            var result = ""
            for child in children {
                switch child {
                case .text(let value), .cdata(let value): result += value
                case .element, .comment: continue
                }
            }
            return result
        }

        /// True when the element has child elements (so its text is mixed content, not a value).
        public var hasChildElements: Bool { children.contains { $0.element != nil } }

        /// Indices into ``children`` of the child elements with this local name and namespace.
        public func childIndices(named localName: String, namespaceURI: String?) -> [Int] {
            children.indices.filter { children[$0].element?.name.matches(localName, namespaceURI: namespaceURI) == true }
        }

        /// The first child element with this local name and namespace.
        public func firstChild(named localName: String, namespaceURI: String?) -> Element? {
            childIndices(named: localName, namespaceURI: namespaceURI).first.flatMap { children[$0].element }
        }

        /// Every child element with this local name and namespace.
        public func children(named localName: String, namespaceURI: String?) -> [Element] {
            childIndices(named: localName, namespaceURI: namespaceURI).compactMap { children[$0].element }
        }

        /// The value of an attribute; unprefixed attributes are in no namespace.
        public func attribute(_ localName: String, namespaceURI: String? = nil) -> String? {
            attributes.first { $0.name.matches(localName, namespaceURI: namespaceURI) }?.value
        }

        // MARK: Editing

        /// Replaces all children with one text node (or none, for an empty string).
        public mutating func setText(_ text: String) {
            children = text.isEmpty ? [] : [.text(text)]
        }

        /// Sets an attribute, replacing an existing one with the same local name and namespace.
        public mutating func setAttribute(_ localName: String, namespaceURI: String? = nil, prefix: String? = nil, value: String) {
            if let index = attributes.firstIndex(where: { $0.name.matches(localName, namespaceURI: namespaceURI) }) {
                attributes[index].value = value
            } else {
                let name = QualifiedName(namespaceURI: namespaceURI, prefix: prefix, localName: localName)
                attributes.append(Attribute(name: name, value: value))
            }
        }

        /// Removes an attribute; returns whether one was there.
        @discardableResult
        public mutating func removeAttribute(_ localName: String, namespaceURI: String? = nil) -> Bool {
            let before = attributes.count
            attributes.removeAll { $0.name.matches(localName, namespaceURI: namespaceURI) }
            return attributes.count != before
        }

        /// Replaces the first child element with this name; returns false (and changes nothing) if none.
        @discardableResult
        public mutating func replaceFirstChild(named localName: String, namespaceURI: String?, with element: Element) -> Bool {
            guard let index = childIndices(named: localName, namespaceURI: namespaceURI).first else { return false }
            children[index] = .element(element)
            return true
        }

        /// Inserts a node at an index into ``children`` (clamped to the valid range).
        public mutating func insertChild(_ node: Node, at index: Int) {
            children.insert(node, at: min(max(index, 0), children.count))
        }

        /// Appends a child element.
        public mutating func appendChild(_ element: Element) {
            children.append(.element(element))
        }

        /// Removes every child element with this name; returns how many were removed.
        @discardableResult
        public mutating func removeChildren(named localName: String, namespaceURI: String?) -> Int {
            let before = children.count
            children.removeAll { $0.element?.name.matches(localName, namespaceURI: namespaceURI) == true }
            return before - children.count
        }

        /// Edits the first child element with this name in place; returns false if there is none.
        @discardableResult
        public mutating func withFirstChild<E: Error>(
            named localName: String,
            namespaceURI: String?,
            _ body: (inout Element) throws(E) -> Void
        ) throws(E) -> Bool {
            guard let index = childIndices(named: localName, namespaceURI: namespaceURI).first,
                case .element(var child) = children[index]
            else { return false }
            try body(&child)
            children[index] = .element(child)
            return true
        }

        /// Applies `body` to every element of this subtree, this one included, depth first.
        public mutating func transformAll(_ body: (inout Element) -> Void) {
            body(&self)
            for index in children.indices {
                guard case .element(var child) = children[index] else { continue }
                child.transformAll(body)
                children[index] = .element(child)
            }
        }
    }
}
