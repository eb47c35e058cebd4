/// `registerTokenRequest` (registerTokenRequestType): `encryptionKeyId`? (cnp only), `orderId`?, one
/// of `paypageRegistrationId` | `applepay` (the other choices, `accountNumber`,
/// `encryptedAccountNumber`, `echeckForToken`, `mpos`, are not Paywarden's to serve), then
/// `cardValidationNum`? | `encryptedCardValidationNum`?.
public struct CnpRegisterTokenRequest: Sendable, Hashable {
    public enum Source: Sendable, Hashable {
        case paypageRegistrationId(String)
        case applePay(CnpApplePay)
    }

    public var attributes: CnpTransactionAttributes
    public var orderId: String?
    public var source: Source
    public var hasCardValidationNum: Bool

    public init(attributes: CnpTransactionAttributes, orderId: String? = nil, source: Source, hasCardValidationNum: Bool = false) {
        self.attributes = attributes
        self.orderId = orderId
        self.source = source
        self.hasCardValidationNum = hasCardValidationNum
    }

    static func parse(_ element: ProcessorXML.Element, dialect: CnpDialect) throws(ProcessorMessageError) -> CnpRegisterTokenRequest {
        let reader = dialect.reader
        let path = "registerTokenRequest"
        let attributes = try CnpTransactionAttributes.parse(element, dialect: dialect)
        let children = try reader.elements(of: element, path: path)
        var index = 0
        func next(_ name: String) -> ProcessorXML.Element? {
            guard index < children.count, children[index].name.localName == name else { return nil }
            defer { index += 1 }
            return children[index]
        }
        if dialect == .cnp, let key = next("encryptionKeyId") {
            try reader.rules.length(try reader.value(key, path: "\(path)/encryptionKeyId"), "\(path)/encryptionKeyId", max: 25)
        }
        var orderId: String?
        if let order = next("orderId") {
            let value = try reader.value(order, path: "\(path)/orderId")
            try reader.rules.length(value, "\(path)/orderId", max: CnpSchema.orderIdMaximum)
            orderId = value
        }
        guard index < children.count else { throw reader.rules.missing("\(path)/paypageRegistrationId or \(path)/applepay") }
        let sourceElement = children[index]
        index += 1
        let source: Source
        switch sourceElement.name.localName {
        case "paypageRegistrationId":
            let value = try reader.value(sourceElement, path: "\(path)/paypageRegistrationId")
            try reader.rules.length(value, "\(path)/paypageRegistrationId", min: 1, max: CnpSchema.paypageRegistrationIdMaximum)
            source = .paypageRegistrationId(value)
        case "applepay":
            source = .applePay(try CnpApplePay.parse(sourceElement, path: "\(path)/applepay", dialect: dialect))
        case "accountNumber", "encryptedAccountNumber", "echeckForToken", "mpos":
            let field = "\(path)/\(sourceElement.name.localName)"
            throw ProcessorMessageError(
                .cnpAPI, .unsupportedPaymentSource, field: field, "\(field) is not served; send paypageRegistrationId or applepay")
        case let other:
            throw reader.rules.missing("\(path)/paypageRegistrationId or \(path)/applepay (found \(other.prefix(32)))")
        }
        var hasCardValidationNum = false
        if let cvv = next("cardValidationNum") {
            try reader.rules.length(try reader.value(cvv, path: "\(path)/cardValidationNum"), "\(path)/cardValidationNum", max: 4)
            hasCardValidationNum = true
        } else if let encrypted = next("encryptedCardValidationNum") {
            let value = try reader.value(encrypted, path: "\(path)/encryptedCardValidationNum")
            try reader.rules.length(value, "\(path)/encryptedCardValidationNum", min: 1, max: CnpSchema.encryptedValueMaximum)
            hasCardValidationNum = true
        }
        if index < children.count {
            throw reader.rules.unexpected("\(path)/\(children[index].name.localName)", in: path)
        }
        return CnpRegisterTokenRequest(attributes: attributes, orderId: orderId, source: source, hasCardValidationNum: hasCardValidationNum)
    }
}
