/// A `cnpOnlineRequest` or legacy `litleOnlineRequest`: the envelope (version, merchant, credentials)
/// and its one transaction. The parsed document is kept so the request can be rewritten and forwarded
/// with everything Paywarden does not interpret.
public struct CnpOnlineRequest: Sendable, CustomStringConvertible, CustomReflectable {
    public var dialect: CnpDialect
    public var version: String
    public var merchantId: String
    public var user: String
    /// The API password from `authentication`; never shown by ``description``.
    public var password: String
    public var transaction: CnpTransaction
    public var document: ProcessorXML.Document

    /// Parses and validates a request body.
    public static func parse(_ bytes: [UInt8], limits: ProcessorXML.Limits = .default) throws(ProcessorMessageError) -> CnpOnlineRequest {
        let document = try XMLFieldReader(format: .cnpAPI, namespaceURI: nil).parse(bytes, limits: limits)
        let root = document.root
        guard let dialect = CnpDialect(namespaceURI: root.name.namespaceURI), root.name.localName == dialect.requestRootName else {
            let expected = CnpDialect.allCases.map { "\($0.requestRootName) in \($0.namespaceURI)" }.joined(separator: " or ")
            throw ProcessorMessageError(.cnpAPI, .unexpectedRoot, field: root.name.localName, "the root element must be \(expected)")
        }
        let reader = dialect.reader
        let path = dialect.requestRootName
        let version = try reader.requiredAttribute(root, "version", path: path, max: CnpSchema.versionMaximum)
        let merchantId = try reader.requiredAttribute(root, "merchantId", path: path, max: CnpSchema.merchantIdMaximum)
        let children = try reader.elements(of: root, path: path)
        guard let authentication = children.first, authentication.name.localName == "authentication" else {
            throw reader.rules.missing("\(path)/authentication")
        }
        try reader.checkSequence(authentication, ["user", "password"], optional: [], path: "authentication")
        let user = try reader.requiredValue(authentication, "user", path: "authentication", min: 0, max: CnpSchema.credentialMaximum)
        let password = try reader.requiredValue(
            authentication, "password", path: "authentication", min: 0, max: CnpSchema.passwordMaximum)
        guard children.count >= 2 else { throw reader.rules.missing("\(path)/transaction") }
        guard children.count == 2 else {
            let extra = children[2].name.localName
            throw ProcessorMessageError(.cnpAPI, .unexpectedField, field: "\(path)/\(extra)", "\(path) carries exactly one transaction")
        }
        let transaction = try CnpTransaction.parse(children[1], dialect: dialect)
        return CnpOnlineRequest(
            dialect: dialect, version: version, merchantId: merchantId, user: user, password: password,
            transaction: transaction, document: document
        )
    }

    public var description: String {
        "CnpOnlineRequest(\(dialect.requestRootName) version \(version), merchant \(merchantId), user \(user), "
            + "password: <hidden>, transaction: \(transaction.name))"
    }

    /// What `dump` and reflection show: the envelope without the password or the document.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "dialect": dialect, "version": version, "merchantId": merchantId, "user": user, "password": "<hidden>",
                "transaction": transaction.name,
            ], displayStyle: .struct)
    }
}
