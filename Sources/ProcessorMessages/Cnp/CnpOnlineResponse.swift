/// Builds whole `cnpOnlineResponse`/`litleOnlineResponse` documents.
public enum CnpOnlineResponse {
    /// `<cnpOnlineResponse version="…" response="0" message="Valid Format">` around the given
    /// transaction responses. (cnpOnline_v12.10.xsd allows one; a list is accepted for batch-like use.)
    public static func envelope(
        dialect: CnpDialect, version: String, transactions: [ProcessorXML.Element]
    ) -> ProcessorXML.Document {
        document(dialect: dialect, version: version, status: .validFormat, children: transactions)
    }

    /// The envelope the real service sends for a request it refuses: no transaction response, the
    /// status in the root's attributes. `version` echoes the request's when it could be read.
    public static func errorEnvelope(dialect: CnpDialect, version: String, status: CnpEnvelopeStatus) -> ProcessorXML.Document {
        document(dialect: dialect, version: version, status: status, children: [])
    }

    /// The error envelope for a parse or validation failure.
    public static func errorEnvelope(dialect: CnpDialect, version: String, refusing error: ProcessorMessageError) -> ProcessorXML.Document {
        errorEnvelope(dialect: dialect, version: version, status: .forRefusal(error))
    }

    /// The error envelope for a body ``CnpOnlineRequest/parse(_:limits:)`` refused, when there is no
    /// request to echo: the dialect is the body root's namespace and the version its `version`
    /// attribute (when it is digits and dots), read again from the body if it is XML; otherwise
    /// `fallbackDialect` and `fallbackVersion`.
    public static func errorEnvelope(
        answering body: [UInt8], refusing error: ProcessorMessageError, fallbackDialect: CnpDialect = .cnp,
        fallbackVersion: String = "12.10", limits: ProcessorXML.Limits = .default
    ) -> ProcessorXML.Document {
        var dialect = fallbackDialect
        var version = fallbackVersion
        // A body the XML parser refused is not parsed again.
        if error.xmlError == nil, let root = try? ProcessorXML.parse(body, limits: limits).root,
            let named = CnpDialect(namespaceURI: root.name.namespaceURI)
        {
            dialect = named
            if let echoed = root.attribute("version").map(FieldRules.collapsed), isVersion(echoed) { version = echoed }
        }
        return errorEnvelope(dialect: dialect, version: version, refusing: error)
    }

    /// `12.10`, `10.3`: 1–10 characters (versionType), digits and dots, starting with a digit.
    private static func isVersion(_ text: String) -> Bool {
        guard let first = text.utf8.first, (0x30...0x39).contains(first), text.utf8.count <= CnpSchema.versionMaximum else { return false }
        return text.utf8.allSatisfy { (0x30...0x39).contains($0) || $0 == UInt8(ascii: ".") }
    }

    private static func document(
        dialect: CnpDialect, version: String, status: CnpEnvelopeStatus, children: [ProcessorXML.Element]
    ) -> ProcessorXML.Document {
        var root = dialect.element(dialect.responseRootName)
        root.namespaceDeclarations = [.init(prefix: nil, namespaceURI: dialect.namespaceURI)]
        root.setAttribute("version", value: String(version.prefix(CnpSchema.versionMaximum)))
        root.setAttribute("response", value: status.response)
        root.setAttribute("message", value: status.message)
        for child in children { root.appendChild(rehomed(child, into: dialect)) }
        return ProcessorXML.Document(declaration: .init(), root: root)
    }

    /// Moves elements built for one dialect into another's namespace (same local names).
    static func rehomed(_ element: ProcessorXML.Element, into dialect: CnpDialect) -> ProcessorXML.Element {
        var copy = element
        copy.transformAll { node in
            if CnpDialect(namespaceURI: node.name.namespaceURI) != nil {
                node.name = .init(namespaceURI: dialect.namespaceURI, prefix: nil, localName: node.name.localName)
            }
        }
        return copy
    }
}
