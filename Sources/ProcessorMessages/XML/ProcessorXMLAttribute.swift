extension ProcessorXML {
    /// An attribute other than a namespace declaration. Unprefixed attributes are in no namespace.
    public struct Attribute: Sendable, Hashable {
        public var name: QualifiedName
        /// The normalized value (references resolved, whitespace characters turned into spaces).
        public var value: String

        public init(name: QualifiedName, value: String) {
            self.name = name
            self.value = value
        }

        public init(_ localName: String, _ value: String) {
            self.init(name: QualifiedName(localName: localName), value: value)
        }
    }

    /// An `xmlns` or `xmlns:prefix` declaration, kept apart from attributes and in document order so
    /// the serializer writes back exactly what the sender declared.
    public struct NamespaceDeclaration: Sendable, Hashable {
        /// The declared prefix; nil for the default namespace.
        public var prefix: String?
        /// The namespace URI; empty only for an undeclaration of the default namespace (`xmlns=""`).
        public var namespaceURI: String

        public init(prefix: String?, namespaceURI: String) {
            self.prefix = prefix
            self.namespaceURI = namespaceURI
        }
    }
}
