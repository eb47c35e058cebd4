/// A `SaleByRecordNo`/`AuthorizeByRecordNo` request body, validated, with the whole JSON object kept
/// (``body``) so unknown fields travel on to the upstream.
public struct MercuryPayRequest: Sendable, CustomStringConvertible, CustomReflectable {
    public var operation: MercuryPayOperation
    public var operatorID: String
    public var invoiceNo: String
    /// Decimal string with two places, as received.
    public var purchase: String
    public var tax: String?
    public var tokenType: MercuryPayTokenType
    /// The registration ID or OmniToken; not shown by ``description``.
    public var recordNo: String
    public var frequency: MercuryPayFrequency
    public var body: ProcessorJSON

    /// Card-data fields a by-RecordNo request must not carry alongside its token.
    static let cardDataFields: Set<String> = [
        "AcctNo", "ExpDate", "CVVData", "Track2", "EncryptedBlock", "EncryptedKey", "EncryptedFormat",
    ]

    public static func parse(
        _ bytes: [UInt8],
        operation: MercuryPayOperation,
        limits: MercuryPayLimits = .default,
        jsonLimits: ProcessorJSON.Limits = .default
    ) throws(ProcessorMessageError) -> MercuryPayRequest {
        let body = try ProcessorJSON.parse(bytes, format: .mercuryPay, limits: jsonLimits)
        guard let members = body.members else {
            throw ProcessorMessageError(.mercuryPay, .unexpectedRoot, field: nil, "the body must be a JSON object")
        }
        let rules = FieldRules(format: .mercuryPay)
        // Names are compared as written, but an engine that matches them without case (as .NET's
        // readers do) would see two of one: `Frequency` judged here, `frequency` acted on there.
        var spellings: [String: String] = [:]
        for member in members {
            if let first = spellings.updateValue(member.key, forKey: member.key.lowercased()) {
                throw ProcessorMessageError(
                    .mercuryPay, .duplicateField, field: member.key,
                    "\(member.key) repeats \(first) in another case; each member may appear once, in any case")
            }
        }
        for member in members where cardDataFields.contains(member.key) {
            throw ProcessorMessageError(
                .mercuryPay, .unexpectedField, field: member.key,
                "\(member.key) is not allowed in \(operation.rawValue): the card is named by RecordNo")
        }
        func string(_ key: String, required: Bool = true) throws(ProcessorMessageError) -> String? {
            guard let value = body[key] else {
                if required { throw rules.missing(key) }
                return nil
            }
            guard let text = value.stringValue else {
                throw ProcessorMessageError(.mercuryPay, .invalidFormat, field: key, "\(key) must be a JSON string")
            }
            return text
        }
        let operatorID = try string("OperatorID") ?? ""
        try rules.length(operatorID, "OperatorID", min: 1, max: limits.operatorIDMaximum)
        try printable(operatorID, "OperatorID")
        let invoiceNo = try string("InvoiceNo") ?? ""
        try rules.length(invoiceNo, "InvoiceNo", min: 1, max: limits.invoiceNoMaximum)
        try alphanumeric(invoiceNo, "InvoiceNo")
        let purchase = try string("Purchase") ?? ""
        try amount(purchase, "Purchase", limits: limits, positive: true)
        let tax = try string("Tax", required: false)
        if let tax { try amount(tax, "Tax", limits: limits, positive: false) }
        let tokenTypeText = try string("TokenType") ?? ""
        guard let tokenType = MercuryPayTokenType(field: tokenTypeText) else {
            throw ProcessorMessageError(
                .mercuryPay, .unsupportedTokenType, field: "TokenType",
                "TokenType must be RegistrationID, RegistrationId or OmniToken")
        }
        let recordNo = try string("RecordNo") ?? ""
        switch tokenType {
        case .registrationID:
            try rules.length(recordNo, "RecordNo", min: 1, max: limits.registrationIDMaximum)
            try printable(recordNo, "RecordNo")
        case .omniToken:
            try rules.digits(recordNo, "RecordNo", count: 13...19)
        }
        let frequencyText = try string("Frequency") ?? ""
        try rules.oneOf(frequencyText, "Frequency", MercuryPayFrequency.allCases.map(\.rawValue))
        return MercuryPayRequest(
            operation: operation, operatorID: operatorID, invoiceNo: invoiceNo, purchase: purchase, tax: tax,
            tokenType: tokenType, recordNo: recordNo, frequency: MercuryPayFrequency(rawValue: frequencyText) ?? .oneTime, body: body
        )
    }

    /// `^[0-9]{1,N}\.[0-9]{2}$`, and above zero for a purchase.
    private static func amount(_ value: String, _ field: String, limits: MercuryPayLimits, positive: Bool) throws(ProcessorMessageError) {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        let valid =
            parts.count == 2
            && (1...limits.amountIntegerDigitsMaximum).contains(parts[0].utf8.count) && parts[1].utf8.count == 2
            && parts.allSatisfy { $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        guard valid else {
            throw ProcessorMessageError(
                .mercuryPay, .invalidFormat, field: field,
                "\(field) must be a decimal string with two places and at most \(limits.amountIntegerDigitsMaximum) integer digits")
        }
        if positive, value.utf8.allSatisfy({ $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: ".") }) {
            throw ProcessorMessageError(.mercuryPay, .invalidValue, field: field, "\(field) must be greater than zero")
        }
    }

    private static func printable(_ value: String, _ field: String) throws(ProcessorMessageError) {
        guard value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) else {
            throw ProcessorMessageError(.mercuryPay, .invalidFormat, field: field, "\(field) must be printable ASCII")
        }
    }

    private static func alphanumeric(_ value: String, _ field: String) throws(ProcessorMessageError) {
        guard value.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") })
        else {
            throw ProcessorMessageError(.mercuryPay, .invalidFormat, field: field, "\(field) must be letters, digits or '-'")
        }
    }

    public var description: String {
        "MercuryPayRequest(\(operation.rawValue), invoice \(invoiceNo), purchase \(purchase), tokenType \(tokenType.rawValue), "
            + "recordNo: <hidden>, frequency \(frequency.rawValue))"
    }

    /// What `dump` and reflection show: no RecordNo, and the body's field names only.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "operation": operation, "invoiceNo": invoiceNo, "purchase": purchase, "tax": tax as Any, "tokenType": tokenType,
                "recordNo": "<hidden>", "frequency": frequency, "fields": body.members?.map(\.key) ?? [],
            ], displayStyle: .struct)
    }
}
