extension ProcessorXML {
    /// An element or attribute name: the namespace it resolves to, the prefix it was written with
    /// (kept so re-serialization reproduces the sender's prefixes) and the local name.
    public struct QualifiedName: Sendable, Hashable, CustomStringConvertible {
        /// The resolved namespace; nil for no namespace.
        public var namespaceURI: String?
        /// The prefix as written; nil when unprefixed.
        public var prefix: String?
        public var localName: String

        public init(namespaceURI: String? = nil, prefix: String? = nil, localName: String) {
            self.namespaceURI = namespaceURI
            self.prefix = prefix
            self.localName = localName
        }

        /// `prefix:localName`, or `localName` when unprefixed.
        public var qualified: String {
            guard let prefix else { return localName }
            return prefix + ":" + localName
        }

        /// True when the local name and namespace match; the prefix does not matter.
        public func matches(_ localName: String, namespaceURI: String?) -> Bool {
            self.localName == localName && self.namespaceURI == namespaceURI
        }

        public var description: String {
            guard let namespaceURI else { return qualified }
            return "{\(namespaceURI)}\(localName)"
        }
    }
}
