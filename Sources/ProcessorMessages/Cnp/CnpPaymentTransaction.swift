/// An `authorization` or `sale`, parsed for what Paywarden substitutes and kept whole (``element``) so
/// everything else, unknown elements included, is forwarded untouched.
public struct CnpPaymentTransaction: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case authorization
        case sale

        /// The response element's name (`authorizationResponse`, `saleResponse`).
        public var responseName: String { rawValue + "Response" }
    }

    public enum PaymentSource: Sendable, Hashable {
        case paypage(CnpPaypage)
        case applePay(CnpApplePay)
        /// Any other payment source (`card`, `token`, `paypal`…), by element name; forwarded as is.
        case other(String)
        /// No payment source: an authorization by `cnpTxnId` (a re-authorization).
        case none
    }

    public var kind: Kind
    public var attributes: CnpTransactionAttributes
    public var orderId: String?
    public var paymentSource: PaymentSource
    /// The transaction element as received.
    public var element: ProcessorXML.Element

    /// True when Paywarden has card data to substitute (a paypage or an Apple Pay token).
    public var needsCardData: Bool {
        switch paymentSource {
        case .paypage, .applePay: true
        case .other, .none: false
        }
    }

    static func parse(
        _ element: ProcessorXML.Element, kind: Kind, dialect: CnpDialect
    ) throws(ProcessorMessageError) -> CnpPaymentTransaction {
        let reader = dialect.reader
        let path = kind.rawValue
        let attributes = try CnpTransactionAttributes.parse(element, dialect: dialect)
        let children = try reader.elements(of: element, path: path, allowForeign: true)
        let names = children.map(\.name.localName)
        func position(_ name: String) -> Int? { names.firstIndex(of: name) }

        let sources = children.indices.filter { CnpSchema.paymentSourceNames.contains(names[$0]) }
        // The relays decide on the payment source and on what the stored-credential rule reads: one of
        // each, in any namespace, so an engine that reads another one (a second, or one in a namespace
        // it does not tell apart) never gets a request judged on the first.
        let everyName = element.childElements.map(\.name.localName)
        guard sources.count <= 1, everyName.filter(CnpSchema.paymentSourceNames.contains).count <= 1 else {
            throw ProcessorMessageError(
                .cnpAPI, .duplicateField, field: "\(path)/payment source", "\(path) may carry only one payment source")
        }
        for name in CnpSchema.storedCredentialFieldNames where everyName.filter({ $0 == name }).count > 1 {
            throw ProcessorMessageError(
                .cnpAPI, .duplicateField, field: "\(path)/\(name)",
                "\(path)/\(name) must appear only once, in any namespace: the stored-credential rule reads it")
        }
        if kind == .authorization, names.first == dialect.transactionIdName, sources.isEmpty {
            let txnId = try reader.value(children[0], path: "\(path)/\(dialect.transactionIdName)")
            try reader.rules.digits(txnId, "\(path)/\(dialect.transactionIdName)", count: 1...19)
            return CnpPaymentTransaction(kind: kind, attributes: attributes, orderId: nil, paymentSource: .none, element: element)
        }
        let orderId = try reader.requiredValue(element, "orderId", path: path, max: CnpSchema.orderIdMaximum)
        guard let orderSourceIndex = position("orderSource") else { throw reader.rules.missing("\(path)/orderSource") }
        _ = try reader.requiredChild(element, "orderSource", path: path)
        guard let sourceIndex = sources.first else {
            throw ProcessorMessageError(.cnpAPI, .missingField, field: "\(path)/payment source", "\(path) must carry a payment source")
        }
        // The sequence is orderId … orderSource … <payment source> … cardholderAuthentication; the
        // rewrite inserts relative to these, so their order is checked, not assumed.
        if let orderIdIndex = position("orderId"), orderIdIndex > orderSourceIndex {
            throw outOfOrder("\(path)/orderId")
        }
        if sourceIndex < orderSourceIndex { throw outOfOrder("\(path)/\(names[sourceIndex])") }
        let authenticationNames = ["cardholderAuthentication", "fraudCheck"].filter { names.contains($0) }
        if authenticationNames.count > 1 {
            throw ProcessorMessageError(
                .cnpAPI, .duplicateField, field: "\(path)/cardholderAuthentication",
                "\(path) may carry cardholderAuthentication or fraudCheck, not both")
        }
        for name in authenticationNames {
            _ = try reader.requiredChild(element, name, path: path)
            if let index = position(name), index < sourceIndex { throw outOfOrder("\(path)/\(name)") }
        }
        let source: PaymentSource
        switch names[sourceIndex] {
        case "paypage": source = .paypage(try CnpPaypage.parse(children[sourceIndex], path: "\(path)/paypage", dialect: dialect))
        case "applepay": source = .applePay(try CnpApplePay.parse(children[sourceIndex], path: "\(path)/applepay", dialect: dialect))
        case "token":
            try checkStoredToken(children[sourceIndex], path: "\(path)/token", dialect: dialect)
            source = .other("token")
        case let other: source = .other(other)
        }
        return CnpPaymentTransaction(kind: kind, attributes: attributes, orderId: orderId, paymentSource: source, element: element)
    }

    /// A `token` is forwarded as it came but for what the relay swaps: the token value it looks up
    /// (`cnpToken`, or `litleToken` in either dialect) and the `type` the card swap reads, each once.
    private static func checkStoredToken(_ token: ProcessorXML.Element, path: String, dialect: CnpDialect) throws(ProcessorMessageError) {
        let names = token.childElements.map(\.name.localName)
        if names.filter({ $0 == "cnpToken" || $0 == "litleToken" }).count > 1 {
            throw ProcessorMessageError(
                .cnpAPI, .duplicateField, field: "\(path)/\(dialect.tokenName)", "\(path) may carry only one \(dialect.tokenName)")
        }
        if names.filter({ $0 == "type" }).count > 1 {
            throw ProcessorMessageError(.cnpAPI, .duplicateField, field: "\(path)/type", "\(path)/type must appear only once")
        }
    }

    private static func outOfOrder(_ field: String) -> ProcessorMessageError {
        ProcessorMessageError(.cnpAPI, .outOfOrder, field: field, "\(field) is out of the schema's sequence")
    }
}
