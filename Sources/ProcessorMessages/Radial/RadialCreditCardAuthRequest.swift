/// A `CreditCardAuthRequest` for `/payments/creditcard/auth/DW.xml`, validated against seed 003's
/// element table (docs/processors.md, "Radial") and the 1.0 schema, in one of two shapes:
/// - the digital-wallet request: an Apple Pay token in `WalletPaymentInformation`, then `OrderId`;
/// - the card-not-present request the app builds from `decryptblob`'s answer: `PaymentContext`
///   {`OrderId`, `PaymentAccountUniqueId isToken="true"` (Paywarden's high-value token)}, then an
///   optional `ExpirationDate` (the card's own expiry is sent, whatever this says).
/// The rest is the same in both. The document is kept for forwarding; elements this type does not
/// know stay where they are.
public struct RadialCreditCardAuthRequest: Sendable, Hashable {
    public var requestId: String
    public var source: RadialPaymentSource
    public var orderId: String
    public var amount: String
    public var currencyCode: String
    public var billingFirstName: String
    public var billingLastName: String
    public var billingPhoneNo: String
    public var billingAddress: RadialAddress
    public var customerEmail: String
    public var customerIPAddress: String
    public var shipToFirstName: String
    public var shipToLastName: String
    public var shipToPhoneNo: String?
    public var shippingAddress: RadialAddress
    public var schemaVersion: String?
    public var document: ProcessorXML.Document

    /// The Apple Pay token of a digital-wallet request.
    public var wallet: RadialApplePayBlob? {
        guard case .wallet(let blob) = source else { return nil }
        return blob
    }

    public static func parse(
        _ bytes: [UInt8], limits: ProcessorXML.Limits = .default
    ) throws(ProcessorMessageError) -> RadialCreditCardAuthRequest {
        let reader = RadialSchema.reader
        let document = try reader.parse(bytes, limits: limits)
        let root = document.root
        guard root.name.matches("CreditCardAuthRequest", namespaceURI: RadialSchema.namespaceURI) else {
            throw ProcessorMessageError(
                .radial, .unexpectedRoot, field: root.name.localName,
                "the root element must be CreditCardAuthRequest in \(RadialSchema.namespaceURI)")
        }
        let path = "CreditCardAuthRequest"
        let requestId = try reader.requiredAttribute(root, "requestId", path: path, max: RadialSchema.requestIdMaximum)
        // A wallet makes it a wallet request, in which a PaymentContext is refused by name.
        let tokenContext =
            root.firstChild(named: "WalletPaymentInformation", namespaceURI: RadialSchema.namespaceURI) == nil
            ? root.firstChild(named: "PaymentContext", namespaceURI: RadialSchema.namespaceURI) : nil
        try checkOrder(root, path: path, highValueToken: tokenContext != nil)
        let rules = reader.rules
        func text(_ name: String, _ range: ClosedRange<Int>) throws(ProcessorMessageError) -> String {
            try reader.requiredValue(root, name, path: path, min: range.lowerBound, max: range.upperBound)
        }
        let source: RadialPaymentSource
        let orderId: String
        if let tokenContext {
            let context = try parseTokenContext(tokenContext, path: "\(path)/PaymentContext")
            (source, orderId) = (.highValueToken(context.token), context.orderId)
            if let expiry = try reader.optionalValue(root, "ExpirationDate", path: path, max: 7) {
                let parts = expiry.split(separator: "-", omittingEmptySubsequences: false)
                guard parts.count == 2, parts[0].count == 4, parts[1].count == 2, parts.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) })
                else {
                    throw ProcessorMessageError(
                        .radial, .invalidFormat, field: "\(path)/ExpirationDate", "ExpirationDate must be YYYY-MM (gYearMonth)")
                }
            }
        } else {
            source = .wallet(
                try parseWallet(
                    try reader.requiredChild(root, "WalletPaymentInformation", path: path), path: "\(path)/WalletPaymentInformation"))
            orderId = try text("OrderId", RadialSchema.orderIdRange)
        }
        let amountElement = try reader.requiredChild(root, "Amount", path: path)
        let amount = try reader.value(amountElement, path: "\(path)/Amount")
        try checkAmount(amount, field: "\(path)/Amount")
        let currency = try reader.requiredAttribute(amountElement, "currencyCode", path: "\(path)/Amount", min: 3, max: 3)
        guard currency.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) else {
            throw ProcessorMessageError(
                .radial, .invalidFormat, field: "\(path)/Amount/@currencyCode", "currencyCode must be three capital letters (ISO 4217)")
        }
        let billingPhone = try text("BillingPhoneNo", RadialSchema.phoneRange)
        try checkPhone(billingPhone, field: "\(path)/BillingPhoneNo")
        let shipToPhone = try reader.optionalValue(root, "ShipToPhoneNo", path: path, max: RadialSchema.phoneRange.upperBound)
        if let shipToPhone { try checkPhone(shipToPhone, field: "\(path)/ShipToPhoneNo") }
        let email = try text("CustomerEmail", RadialSchema.emailRange)
        try checkEmail(email, field: "\(path)/CustomerEmail")
        let address = try text("CustomerIPAddress", 7...15)
        guard isDottedQuad(address) else {
            throw ProcessorMessageError(
                .radial, .invalidFormat, field: "\(path)/CustomerIPAddress", "CustomerIPAddress must be an IPv4 dotted quad")
        }
        let schemaVersion = try reader.optionalValue(root, "SchemaVersion", path: path, max: 10)
        if let schemaVersion {
            let parts = schemaVersion.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }) else {
                throw ProcessorMessageError(
                    .radial, .invalidFormat, field: "\(path)/SchemaVersion", "SchemaVersion must be major.minor, like 1.2")
            }
        }
        if let flag = try reader.optionalValue(root, "isRequestToCorrectCVVOrAVSError", path: path, max: 5) {
            try rules.oneOf(flag, "\(path)/isRequestToCorrectCVVOrAVSError", ["true", "false", "1", "0"])
        }
        return RadialCreditCardAuthRequest(
            requestId: requestId, source: source, orderId: orderId, amount: amount, currencyCode: currency,
            billingFirstName: try text("BillingFirstName", RadialSchema.nameRange),
            billingLastName: try text("BillingLastName", RadialSchema.nameRange),
            billingPhoneNo: billingPhone,
            billingAddress: try RadialAddress.parse(
                try reader.requiredChild(root, "BillingAddress", path: path), path: "\(path)/BillingAddress"),
            customerEmail: email, customerIPAddress: address,
            shipToFirstName: try text("ShipToFirstName", RadialSchema.nameRange),
            shipToLastName: try text("ShipToLastName", RadialSchema.nameRange),
            shipToPhoneNo: shipToPhone,
            shippingAddress: try RadialAddress.parse(
                try reader.requiredChild(root, "ShippingAddress", path: path), path: "\(path)/ShippingAddress"),
            schemaVersion: schemaVersion, document: document
        )
    }

    /// Known elements in the table's order, each at most once, every required one present (named
    /// when missing). Unknown elements may stand anywhere.
    private static func checkOrder(_ root: ProcessorXML.Element, path: String, highValueToken: Bool) throws(ProcessorMessageError) {
        let reader = RadialSchema.reader
        let order = highValueToken ? RadialSchema.tokenRequestOrder : RadialSchema.walletRequestOrder
        let required = highValueToken ? RadialSchema.tokenRequestRequired : RadialSchema.walletRequestRequired
        var lastRank = -1
        var seen: Set<String> = []
        // Elements of other namespaces stay where they are, but none named as one of Radial's: an
        // engine that does not tell namespaces apart would read two.
        for child in root.childElements where child.name.namespaceURI != RadialSchema.namespaceURI {
            let name = child.name.localName
            guard RadialSchema.tokenRequestOrder.contains(name) || RadialSchema.walletRequestOrder.contains(name) else { continue }
            throw ProcessorMessageError(
                .radial, .duplicateField, field: "\(path)/\(name)",
                "\(path)/\(name) appears in namespace \(child.name.namespaceURI ?? "none"); it belongs once, in "
                    + RadialSchema.namespaceURI)
        }
        for child in try reader.elements(of: root, path: path, allowForeign: true) {
            let name = child.name.localName
            if !highValueToken && (name == "PaymentContext" || name == "ExpirationDate") {
                throw ProcessorMessageError(
                    .radial, .unexpectedField, field: "\(path)/\(name)",
                    "a wallet authorization carries WalletPaymentInformation, not \(name): the card data is Paywarden's to place")
            }
            // One card per request; and an Apple Pay card has no security code to send with its token.
            if highValueToken && ["WalletPaymentInformation", "OrderId", "CardSecurityCode"].contains(name) {
                throw ProcessorMessageError(
                    .radial, .unexpectedField, field: "\(path)/\(name)",
                    "a token authorization carries its card and OrderId in PaymentContext, without \(name)")
            }
            guard let rank = order.firstIndex(of: name) else { continue }
            guard seen.insert(name).inserted else { throw reader.rules.duplicate("\(path)/\(name)") }
            guard rank > lastRank else {
                throw ProcessorMessageError(.radial, .outOfOrder, field: "\(path)/\(name)", "\(path)/\(name) is out of the schema's order")
            }
            lastRank = rank
        }
        for name in order where required.contains(name) && !seen.contains(name) {
            throw reader.rules.missing("\(path)/\(name)")
        }
    }

    /// `PaymentContext` {`OrderId`, `PaymentAccountUniqueId isToken="true"`}: Paywarden swaps its own
    /// tokens for their card, and takes no account number from a client (`isToken="false"`).
    private static func parseTokenContext(
        _ element: ProcessorXML.Element, path: String
    ) throws(ProcessorMessageError) -> (token: String, orderId: String) {
        let reader = RadialSchema.reader
        try reader.checkSequence(element, ["OrderId", "PaymentAccountUniqueId"], optional: [], path: path)
        let orderId = try reader.requiredValue(
            element, "OrderId", path: path, min: RadialSchema.orderIdRange.lowerBound, max: RadialSchema.orderIdRange.upperBound)
        let account = try reader.requiredChild(element, "PaymentAccountUniqueId", path: path)
        let field = "\(path)/PaymentAccountUniqueId"
        let isToken = try reader.requiredAttribute(account, "isToken", path: field, max: 5)
        guard isToken == "true" || isToken == "1" else {
            throw ProcessorMessageError(
                .radial, .invalidValue, field: "\(field)/@isToken",
                "PaymentAccountUniqueId must be a Paywarden high-value token (isToken=\"true\"); an account number is not taken here")
        }
        let token = try reader.value(account, path: field)
        try reader.rules.length(token, field, min: 1, max: RadialSchema.accountUniqueIdRange.upperBound)
        guard token.allSatisfy(\.isASCIIDigit) else {
            throw ProcessorMessageError(.radial, .invalidFormat, field: field, "a high-value token is digits only")
        }
        return (token, orderId)
    }

    /// `WalletPaymentInformation` {ApplePayTransactionId, EphemeralPublicKey, PublicKeyHash, Version,
    /// Data, Signature} (docs.radial.com DW sample). Other wallets (e.g. `PazeData`) are not served.
    private static func parseWallet(_ element: ProcessorXML.Element, path: String) throws(ProcessorMessageError) -> RadialApplePayBlob {
        let reader = RadialSchema.reader
        let order = ["ApplePayTransactionId", "EphemeralPublicKey", "PublicKeyHash", "Version", "Data", "Signature"]
        let children = try reader.elements(of: element, path: path)
        if let other = children.first(where: { !order.contains($0.name.localName) }) {
            let field = "\(path)/\(other.name.localName)"
            throw ProcessorMessageError(
                .radial, .unsupportedPaymentSource, field: field, "\(field) is not an Apple Pay field; only Apple Pay is served")
        }
        try reader.checkSequence(element, order, optional: [], path: path)
        let blob = try RadialApplePayBlob.radial(
            header: element, headerPath: path, transactionIdName: "ApplePayTransactionId", body: element, bodyPath: path)
        for (value, name) in [
            (blob.ephemeralPublicKey, "EphemeralPublicKey"), (blob.publicKeyHash, "PublicKeyHash"),
            (blob.data, "Data"), (blob.signature, "Signature"),
        ] {
            try RadialApplePayBlob.checkRadialBase64(value, "\(path)/\(name)")
        }
        return blob
    }

    private static func checkAmount(_ value: String, field: String) throws(ProcessorMessageError) {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...RadialSchema.amountIntegerDigitsMaximum).contains(parts[0].count), parts[1].count == 2,
            parts.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) })
        else {
            throw ProcessorMessageError(
                .radial, .invalidFormat, field: field, "\(field) must be a decimal with two places (AmountBaseType)")
        }
    }

    private static func checkPhone(_ value: String, field: String) throws(ProcessorMessageError) {
        guard value.contains(where: \.isASCIIDigit), value.allSatisfy({ $0.isASCIIDigit || " +-().".contains($0) }) else {
            throw ProcessorMessageError(.radial, .invalidFormat, field: field, "\(field) must be digits, spaces and + - ( ) .")
        }
    }

    private static func checkEmail(_ value: String, field: String) throws(ProcessorMessageError) {
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            !value.contains(where: { $0.isWhitespace || $0 == "<" || $0 == ">" })
        else {
            throw ProcessorMessageError(.radial, .invalidFormat, field: field, "\(field) must be an e-mail address (an @ and a dot)")
        }
    }

    /// IPv4Address: `((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])\.){3}(…)`, so no leading zeros.
    static func isDottedQuad(_ value: String) -> Bool {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { part in
                guard (1...3).contains(part.count), part.allSatisfy(\.isASCIIDigit), let number = Int(part) else { return false }
                return number <= 255 && (part.count == 1 || part.first != "0")
            }
    }
}
