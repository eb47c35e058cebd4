/// A small, strict XML 1.0 DOM for processor messages: parse, edit, re-serialize.
///
/// Only the subset the processors' formats use is accepted: elements, attributes, namespaces, text,
/// CDATA, comments, the XML declaration, the five predefined entities and numeric character
/// references. Everything else (DTDs, other entities, processing instructions) is refused with a
/// typed ``ProcessorXMLError``; see ``ProcessorXMLParser`` for why this is not FoundationXML.
public enum ProcessorXML {
    /// The namespace bound to the `xml` prefix by the Namespaces in XML recommendation.
    public static let xmlNamespaceURI = "http://www.w3.org/XML/1998/namespace"
    /// The namespace of `xmlns` attributes; it never appears on a parsed attribute.
    public static let xmlnsNamespaceURI = "http://www.w3.org/2000/xmlns/"

    /// Caps enforced while parsing, each with its own ``ProcessorXMLError/Code``.
    ///
    /// The defaults fit every processor message seen in the specifications with a wide margin: the
    /// largest legitimate field is an Apple Pay CMS signature (about 5 KiB of Base64) and a full cnpAPI
    /// authorization has fewer than 200 elements, nested about 6 deep.
    public struct Limits: Sendable, Hashable {
        /// Largest document accepted, in bytes, checked before any parsing.
        public var maximumBytes: Int
        /// Deepest element nesting accepted (the root element is depth 1).
        public var maximumDepth: Int
        /// Most elements accepted in one document.
        public var maximumElements: Int
        /// Most attributes (namespace declarations included) accepted on one element.
        public var maximumAttributesPerElement: Int
        /// Longest text node, CDATA section, comment or attribute value accepted, in UTF-8 bytes.
        public var maximumTextBytes: Int

        public init(
            maximumBytes: Int = 64 * 1024,
            maximumDepth: Int = 32,
            maximumElements: Int = 2_000,
            maximumAttributesPerElement: Int = 256,
            maximumTextBytes: Int = 16 * 1024
        ) {
            self.maximumBytes = maximumBytes
            self.maximumDepth = maximumDepth
            self.maximumElements = maximumElements
            self.maximumAttributesPerElement = maximumAttributesPerElement
            self.maximumTextBytes = maximumTextBytes
        }

        /// The defaults described on each property.
        public static let `default` = Limits()
    }

    /// Parses a complete document from UTF-8 bytes.
    public static func parse(_ bytes: [UInt8], limits: Limits = .default) throws(ProcessorXMLError) -> Document {
        var parser = ProcessorXMLParser(bytes: bytes, limits: limits)
        return try parser.parseDocument()
    }

    /// Parses a complete document from a string (its UTF-8 encoding is what the limits measure).
    public static func parse(_ text: String, limits: Limits = .default) throws(ProcessorXMLError) -> Document {
        try parse(Array(text.utf8), limits: limits)
    }

    /// Serializes a document to UTF-8 bytes.
    public static func serialize(_ document: Document) -> [UInt8] {
        ProcessorXMLSerializer.serialize(document)
    }

    /// Serializes one element (with the namespace declarations it needs) to UTF-8 bytes.
    public static func serialize(_ element: Element) -> [UInt8] {
        ProcessorXMLSerializer.serialize(Document(root: element))
    }
}
