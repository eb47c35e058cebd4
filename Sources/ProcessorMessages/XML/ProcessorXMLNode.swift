extension ProcessorXML {
    /// A child of an element (or of the document outside the root element).
    public enum Node: Sendable, Hashable {
        case element(Element)
        /// Character data with references resolved.
        case text(String)
        /// A CDATA section's content, kept as a section so it re-serializes as one.
        case cdata(String)
        case comment(String)

        /// The element, when this node is one.
        public var element: Element? {
            if case .element(let element) = self { return element }
            return nil
        }
    }
}
