extension ProcessorXML {
    /// A whole document: the optional XML declaration, comments and whitespace around the root, and
    /// the root element.
    public struct Document: Sendable, Hashable {
        /// The XML declaration, when the input had one (it is written back unchanged in meaning).
        public struct Declaration: Sendable, Hashable {
            public var version: String
            public var encoding: String?
            public var standalone: Bool?

            public init(version: String = "1.0", encoding: String? = "UTF-8", standalone: Bool? = nil) {
                self.version = version
                self.encoding = encoding
                self.standalone = standalone
            }
        }

        public var declaration: Declaration?
        /// Comments (and whitespace text) before the root element.
        public var prolog: [Node]
        public var root: Element
        /// Comments (and whitespace text) after the root element.
        public var epilog: [Node]

        public init(declaration: Declaration? = nil, prolog: [Node] = [], root: Element, epilog: [Node] = []) {
            self.declaration = declaration
            self.prolog = prolog
            self.root = root
            self.epilog = epilog
        }
    }
}
