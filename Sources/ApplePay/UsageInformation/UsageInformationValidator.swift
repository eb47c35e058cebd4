import Foundation
import PaywardenPrimitives

/// Checks a `usageInformation.json` document member by member against Apple's schema
/// (`UsageInformation`, `PastPayment`, `UpcomingPayment` and their details, docs/usage-information.md):
/// required members, types, the enumerations, `schemaVersion` 1, the merchant token identifier,
/// `expirationDate` at most a year ahead, the details object a `paymentType` needs, `interval.count`
/// at least 1 and amounts as decimal strings. Members Apple does not define are refused, and so
/// are strings, lists and documents beyond Paywarden's own bounds (Apple states none).
public struct UsageInformationValidator: Sendable {
    /// Paywarden's bounds: Apple gives none on these.
    public static let maximumDocumentBytes = 1_000_000
    public static let maximumStringLength = 1024
    public static let maximumListLength = 1000

    public let merchantTokenIdentifier: String
    public let now: Date

    public init(merchantTokenIdentifier: String, now: Date = Date()) {
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.now = now
    }

    /// Validates `document`; returns it unchanged (the bytes go into the package as sent).
    public func validate(_ document: [UInt8]) throws(UsageInformationError) -> [UInt8] {
        guard document.count <= Self.maximumDocumentBytes else {
            throw UsageInformationError("", "the document is larger than \(Self.maximumDocumentBytes) bytes")
        }
        let root: StrictJSON.Object
        do {
            root = try StrictJSON.object(document, rules: StrictJSON.Rules(maximumDepth: 16, repeatedNames: .canonicallyEquivalent))
        } catch {
            throw UsageInformationError("", "not a JSON object: \(error.reason)")
        }
        let members = Members(root, path: "")
        try members.only([
            "schemaVersion", "merchantName", "merchantTokenIdentifier", "modificationDate", "expirationDate", "merchantLogoName",
            "otherUsageDescription", "pastPayments", "upcomingPayments", "paymentIssueRecoveryURL",
        ])
        guard try members.number("schemaVersion", required: true) == "1" else {
            throw UsageInformationError("schemaVersion", "must be 1")
        }
        _ = try members.string("merchantName", required: true)
        guard try members.string("merchantTokenIdentifier", required: true) == merchantTokenIdentifier else {
            throw UsageInformationError("merchantTokenIdentifier", "must be the merchant token's identifier, as in the path")
        }
        _ = try members.dateTime("modificationDate", required: true)
        if let expiration = try members.dateTime("expirationDate", required: false), expiration > now.addingTimeInterval(366 * 86_400) {
            throw UsageInformationError("expirationDate", "must be at most one year in the future")
        }
        _ = try members.string("merchantLogoName", required: false)
        _ = try members.string("otherUsageDescription", required: false)
        if let url = try members.string("paymentIssueRecoveryURL", required: false) {
            guard let parsed = URLComponents(string: url), parsed.scheme?.lowercased() == "https", parsed.host?.isEmpty == false else {
                throw UsageInformationError("paymentIssueRecoveryURL", "must be an https URL")
            }
        }
        for payment in try members.objects("pastPayments") { try pastPayment(payment) }
        for payment in try members.objects("upcomingPayments") { try upcomingPayment(payment) }
        return document
    }

    private func pastPayment(_ payment: Members) throws(UsageInformationError) {
        try payment.only(["identifier", "paymentDate", "totalAmount", "lineItems", "summaryItems"])
        _ = try payment.string("identifier", required: true)
        _ = try payment.date("paymentDate", required: true)
        try payment.amount("totalAmount", required: true)
        for item in try payment.objects("lineItems") {
            try item.only(["label", "amount", "imageName"])
            _ = try item.string("label", required: true)
            try item.amount("amount", required: true)
            _ = try item.string("imageName", required: false)
        }
        for item in try payment.objects("summaryItems") {
            try item.only(["label", "amount"])
            _ = try item.string("label", required: true)
            try item.amount("amount", required: true)
        }
    }

    private func upcomingPayment(_ payment: Members) throws(UsageInformationError) {
        let details = [
            "recurring": "recurringPaymentDetails", "deferred": "deferredPaymentDetails",
            "automaticReload": "automaticReloadPaymentDetails",
        ]
        try payment.only(["identifier", "label", "paymentType", "imageName", "paymentIssueDetails"] + details.values)
        _ = try payment.string("identifier", required: true)
        _ = try payment.string("label", required: true)
        let type = try payment.string("paymentType", required: true)!
        guard let needed = details[type] else {
            throw UsageInformationError(payment.path("paymentType"), "must be recurring, deferred or automaticReload")
        }
        _ = try payment.string("imageName", required: false)
        for name in details.values where name != needed && payment.has(name) {
            throw UsageInformationError(payment.path(name), "does not belong to a \(type) payment")
        }
        let detail = try payment.object(needed, required: true)!
        switch type {
        case "recurring":
            try detail.only(["recurringPaymentType", "interval", "scheduledPayments", "endsAfterLastPayment"])
            try detail.oneOf("recurringPaymentType", ["subscription", "billing", "installment", "other"])
            let interval = try detail.object("interval", required: true)!
            try interval.only(["unit", "count"])
            try interval.oneOf("unit", ["minute", "hour", "day", "week", "month", "year"])
            if let count = try interval.number("count", required: false) {
                guard let value = Int(count), value >= 1 else {
                    throw UsageInformationError(interval.path("count"), "must be a whole number of at least 1")
                }
            }
            for scheduled in try detail.objects("scheduledPayments") {
                try scheduled.only(["paymentDate", "amount"])
                _ = try scheduled.date("paymentDate", required: true)
                try scheduled.amount("amount", required: false)
            }
            _ = try detail.bool("endsAfterLastPayment")
        case "deferred":
            try detail.only(["amount", "paymentDate"])
            try detail.amount("amount", required: false)
            _ = try detail.date("paymentDate", required: false)
        default:
            try detail.only(["amount", "thresholdAmount"])
            try detail.amount("amount", required: false)
            try detail.amount("thresholdAmount", required: false)
        }
        if let issue = try payment.object("paymentIssueDetails", required: false) {
            try issue.only(["issueKind", "issueDate"])
            try issue.oneOf("issueKind", ["paymentDeclined"])
            _ = try issue.date("issueDate", required: true)
        }
    }
}

/// An object's members, read with the path of each for errors.
private struct Members {
    let object: StrictJSON.Object
    let prefix: String

    init(_ object: StrictJSON.Object, path: String) {
        self.object = object
        self.prefix = path
    }

    func path(_ name: String) -> String { prefix.isEmpty ? name : "\(prefix).\(name)" }

    func value(_ name: String) -> StrictJSON.Value? {
        object.members.first { $0.name == Array(name.utf8) }?.value
    }

    func has(_ name: String) -> Bool { value(name) != nil }

    func only(_ names: [String]) throws(UsageInformationError) {
        for member in object.members where !names.contains(String(decoding: member.name, as: UTF8.self)) {
            throw UsageInformationError(path(String(decoding: member.name, as: UTF8.self)), "is not a member of Apple's schema here")
        }
    }

    private func missing(_ name: String, _ required: Bool) throws(UsageInformationError) {
        if required { throw UsageInformationError(path(name), "is required") }
    }

    func string(_ name: String, required: Bool) throws(UsageInformationError) -> String? {
        guard let value = value(name) else {
            try missing(name, required)
            return nil
        }
        guard case .string(let bytes) = value else { throw UsageInformationError(path(name), "must be a string") }
        let text = String(decoding: bytes, as: UTF8.self)
        guard !text.isEmpty, text.count <= UsageInformationValidator.maximumStringLength else {
            throw UsageInformationError(path(name), "must be 1 to \(UsageInformationValidator.maximumStringLength) characters")
        }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw UsageInformationError(path(name), "must not contain control characters")
        }
        return text
    }

    func number(_ name: String, required: Bool) throws(UsageInformationError) -> String? {
        guard let value = value(name) else {
            try missing(name, required)
            return nil
        }
        guard case .number(let text) = value else { throw UsageInformationError(path(name), "must be a number") }
        return String(decoding: text, as: UTF8.self)
    }

    func bool(_ name: String) throws(UsageInformationError) -> Bool? {
        guard let value = value(name) else { return nil }
        guard case .bool(let flag) = value else { throw UsageInformationError(path(name), "must be true or false") }
        return flag
    }

    func object(_ name: String, required: Bool) throws(UsageInformationError) -> Members? {
        guard let value = value(name) else {
            try missing(name, required)
            return nil
        }
        guard case .object(let object) = value else { throw UsageInformationError(path(name), "must be an object") }
        return Members(object, path: path(name))
    }

    func objects(_ name: String) throws(UsageInformationError) -> [Members] {
        guard let value = value(name) else { return [] }
        guard case .array(let elements) = value else { throw UsageInformationError(path(name), "must be a list") }
        guard elements.count <= UsageInformationValidator.maximumListLength else {
            throw UsageInformationError(path(name), "has more than \(UsageInformationValidator.maximumListLength) entries")
        }
        var result: [Members] = []
        for (index, element) in elements.enumerated() {
            guard case .object(let object) = element else { throw UsageInformationError("\(path(name))[\(index)]", "must be an object") }
            result.append(Members(object, path: "\(path(name))[\(index)]"))
        }
        return result
    }

    func oneOf(_ name: String, _ allowed: [String]) throws(UsageInformationError) {
        let text = try string(name, required: true)!
        guard allowed.contains(text) else {
            throw UsageInformationError(path(name), "must be one of \(allowed.joined(separator: ", "))")
        }
    }

    /// `CurrencyAmount`: `amount` a decimal number as a string, `currency` an ISO 4217 code.
    func amount(_ name: String, required: Bool) throws(UsageInformationError) {
        guard let amount = try object(name, required: required) else { return }
        try amount.only(["amount", "currency"])
        guard case .string(let bytes)? = amount.value("amount") else {
            throw UsageInformationError(amount.path("amount"), amount.has("amount") ? "must be a string" : "is required")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.range(of: #"^-?[0-9]{1,15}(\.[0-9]{1,6})?$"#, options: .regularExpression) != nil else {
            throw UsageInformationError(amount.path("amount"), "must be a decimal number such as \"12.50\"")
        }
        let currency = try amount.string("currency", required: true)!
        guard currency.utf8.count == 3, currency.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) else {
            throw UsageInformationError(amount.path("currency"), "must be an ISO 4217 alphabetic code such as USD")
        }
    }

    /// An ISO 8601 date-time (RFC 3339: `2026-03-01T09:30:00Z`, offsets and fractions allowed).
    func dateTime(_ name: String, required: Bool) throws(UsageInformationError) -> Date? {
        guard let text = try string(name, required: required) else { return nil }
        guard let date = Self.parseDateTime(text) else {
            throw UsageInformationError(path(name), "must be an ISO 8601 date-time such as 2026-03-01T09:30:00Z")
        }
        return date
    }

    /// An ISO 8601 date (`2026-03-01`) or date-time: Apple ignores or allows the time.
    func date(_ name: String, required: Bool) throws(UsageInformationError) -> Date? {
        guard let text = try string(name, required: required) else { return nil }
        if let date = Self.parseDateTime(text) { return date }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        guard text.range(of: Self.fullDate, options: .regularExpression) != nil, let date = day.date(from: text) else {
            throw UsageInformationError(path(name), "must be an ISO 8601 date such as 2026-03-01")
        }
        return date
    }

    /// RFC 3339's full-date and date-time, checked before Foundation parses them: its parser takes
    /// other spellings (one-digit fields, `/`, `+0530`, hour 24) and traps on a fraction of 35 or
    /// more digits. Nine fraction digits (nanoseconds) are the most a date-time here may carry.
    static let fullDate = #"^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])\z"#
    static let dateTime =
        #"^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?"#
        + #"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])\z"#

    static func parseDateTime(_ text: String) -> Date? {
        guard text.range(of: dateTime, options: .regularExpression) != nil else { return nil }
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }
}
