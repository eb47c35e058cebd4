/// Why a processor message was refused or could not be built. The codes are stable (error bodies,
/// metrics); `field` names the element, attribute or JSON key at fault as the format spells it, and
/// messages state the rule that failed. Neither ever carries a field's value: a PAN, cryptogram,
/// password or registration ID cannot reach a log through this type.
public struct ProcessorMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Format: String, Sendable, Hashable, CaseIterable {
        case cnpAPI = "cnp_api"
        case mercuryPay = "mercurypay"
        case radial = "radial"
        case cardData = "card_data"
    }

    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The body is not acceptable XML; ``xmlError`` says why.
        case malformedXML = "malformed_xml"
        /// The body is not acceptable JSON.
        case malformedJSON = "malformed_json"
        /// The root element (or JSON value) is not the one this operation expects.
        case unexpectedRoot = "unexpected_root"
        case missingField = "missing_field"
        case fieldTooShort = "field_too_short"
        case fieldTooLong = "field_too_long"
        /// The value does not have the required shape (digits, decimal, date, address…).
        case invalidFormat = "invalid_format"
        /// The value is well-formed but not one the format allows (enumerations, ranges).
        case invalidValue = "invalid_value"
        case duplicateField = "duplicate_field"
        case unexpectedField = "unexpected_field"
        /// A known element appears before one the schema's sequence puts ahead of it.
        case outOfOrder = "out_of_order"
        case unsupportedTransaction = "unsupported_transaction"
        /// The transaction carries no payment source Paywarden can substitute (no paypage/applepay).
        case unsupportedPaymentSource = "unsupported_payment_source"
        case unsupportedTokenType = "unsupported_token_type"
        /// Card data handed to a builder is unusable (not digits, bad expiry…).
        case invalidCardData = "invalid_card_data"
        /// An upstream's reply carries the card data the relay forwarded where it cannot be masked
        /// (a name, a number, split across fields): the reply is withheld from the client.
        case echoedCardData = "echoed_card_data"
    }

    public let format: Format
    public let code: Code
    /// The element, attribute or key at fault, as the format spells it (`applepay/header/publicKeyHash`).
    public let field: String?
    public let message: String
    /// The parser's error when ``code`` is ``Code/malformedXML``.
    public let xmlError: ProcessorXMLError?

    public init(_ format: Format, _ code: Code, field: String?, _ message: String, xmlError: ProcessorXMLError? = nil) {
        self.format = format
        self.code = code
        self.field = field.map { Self.redacted($0, maximum: 160) }
        self.message = Self.redacted(message, maximum: 1_024)
        self.xmlError = xmlError
    }

    public var description: String {
        let location = field.map { " [\($0)]" } ?? ""
        return "\(format.rawValue).\(code.rawValue)\(location): \(message)"
    }

    /// Field paths and messages quote names the input chose (an element, attribute or JSON key), so
    /// an account number could ride along in one (`<n4111111111111111/>`). As ``ProcessorXMLError``
    /// does for the names it quotes, a run of more than eight digits (spaces, hyphens, dots and
    /// underscores between them included) keeps its first four and the rest become `#`; and the text
    /// is cut to `maximum` characters.
    static func redacted(_ text: String, maximum: Int) -> String {
        var scalars = Array(text.unicodeScalars.prefix(maximum + 1))
        if scalars.count > maximum { scalars = Array(scalars.prefix(maximum - 1)) + ["…"] }
        func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }
        var start = 0
        while start < scalars.count {
            guard isDigit(scalars[start]) else {
                start += 1
                continue
            }
            var end = start
            var digits: [Int] = []
            while end < scalars.count, isDigit(scalars[end]) || [" ", "-", ".", "_"].contains(scalars[end]) {
                if isDigit(scalars[end]) { digits.append(end) }
                end += 1
            }
            if digits.count > 8 {
                for index in digits.dropFirst(4) { scalars[index] = "#" }
            }
            start = end
        }
        var result = ""
        result.unicodeScalars.append(contentsOf: scalars)
        return result
    }

    static func xml(_ format: Format, _ error: ProcessorXMLError) -> ProcessorMessageError {
        ProcessorMessageError(format, .malformedXML, field: nil, error.description, xmlError: error)
    }
}
