import Foundation
import PaywardenPrimitives

/// The fields of an eProtect paypage registration (`application/x-www-form-urlencoded`), checked
/// against the cnpAPI schema's limits, and the Apple Pay token they carry as the JSON the
/// decryption engine reads.
public struct EProtectForm: Sendable {
    public var paypageID: String
    public var reportGroup: String
    public var id: String
    public var orderID: String?
    /// The `PKPaymentToken.paymentData` rebuilt from the `applepay.*` fields.
    public var tokenJSON: [UInt8]

    /// Why the form was refused: which field and why, never its value.
    public struct Refusal: Error, Sendable {
        public let message: String
        /// The echo fields that were readable, so the reply can repeat them.
        public var partial: Echo
    }

    /// What a reply repeats of the request.
    public struct Echo: Sendable {
        public var id: String?
        public var orderID: String?
        public var reportGroup: String?

        public init(id: String? = nil, orderID: String? = nil, reportGroup: String? = nil) {
            self.id = id
            self.orderID = orderID
            self.reportGroup = reportGroup
        }
    }

    /// Field limits: cnpAPI's where it has them; `data` allows EMV payloads well past the
    /// schema's 2000 characters, up to 20,000.
    static let limits: [String: ClosedRange<Int>] = [
        "paypageId": 1...1024, "reportGroup": 1...25, "id": 1...25, "orderId": 0...256, "requestType": 0...1024,
        "applepay.data": 1...20_000, "applepay.signature": 1...10_000, "applepay.version": 5...10,
        "applepay.header.ephemeralPublicKey": 1...400, "applepay.header.wrappedKey": 1...1024,
        "applepay.header.publicKeyHash": 1...200, "applepay.header.transactionId": 1...250,
        "applepay.header.applicationData": 1...10_000,
    ]
    static let maximumFields = 32

    public init(body: [UInt8]) throws(Refusal) {
        var fields: [String: String] = [:]
        var echo = Echo()
        // One pass over the bytes: the generic `split`s this replaced, and `String.count` over
        // a token's few kilobytes, took 3.5% of a registration's CPU.
        var pairs = 0
        var start = 0
        while start <= body.count {
            let end = body[start...].firstIndex(of: UInt8(ascii: "&")) ?? body.count
            defer { start = end + 1 }
            guard end > start else { continue }
            pairs += 1
            guard pairs <= Self.maximumFields else {
                throw Refusal(message: "the form has more than \(Self.maximumFields) fields", partial: echo)
            }
            let pair = body[start..<end]
            let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? end
            guard let name = Self.decode(pair[..<equals]), let value = Self.decode(pair[min(equals + 1, end)..<end])
            else { throw Refusal(message: "the form is not valid application/x-www-form-urlencoded UTF-8", partial: echo) }
            // Fields outside the eProtect API (a card number posted by mistake, say) are never read.
            guard let limit = Self.limits[name.text] else { continue }
            guard fields[name.text] == nil else { throw Refusal(message: "the field \(name.text) appears more than once", partial: echo) }
            guard limit.contains(value.characters) else {
                throw Refusal(
                    message: "the field \(name.text) must be \(limit.lowerBound) to \(limit.upperBound) characters", partial: echo)
            }
            fields[name.text] = value.text
            switch name.text {
            case "id": echo.id = value.text
            case "orderId": echo.orderID = value.text
            case "reportGroup": echo.reportGroup = value.text
            default: break
            }
        }
        for required in [
            "paypageId", "reportGroup", "id", "applepay.data", "applepay.signature", "applepay.version",
            "applepay.header.publicKeyHash", "applepay.header.transactionId",
        ]
        where fields[required] == nil {
            throw Refusal(message: "the field \(required) is required", partial: echo)
        }
        guard let paypageID = fields["paypageId"],
            paypageID.unicodeScalars.allSatisfy({ $0.isASCII && CharacterSet.alphanumerics.contains($0) })
        else { throw Refusal(message: "paypageId must be letters and digits", partial: echo) }
        let keyFields = ["applepay.header.ephemeralPublicKey", "applepay.header.wrappedKey"].filter { fields[$0] != nil }
        guard keyFields.count == 1 else {
            throw Refusal(
                message: "exactly one of applepay.header.ephemeralPublicKey (EC_v1) and applepay.header.wrappedKey (RSA_v1) is required",
                partial: echo)
        }
        // The token eProtect's fields spell, as JSON for the token reader: written directly, as
        // JSONSerialization took a sixth of a registration's CPU (docs/operations.md, "Performance").
        var json: [UInt8] = [UInt8(ascii: "{")]
        json.reserveCapacity(body.count + 160)
        func member(_ name: String, _ field: String, first: Bool = false) {
            json += Array((first ? "\"" : ",\"").utf8) + Array(name.utf8) + Array("\":".utf8)
            JSONString.append(fields[field]!, to: &json)
        }
        member("version", "applepay.version", first: true)
        member("data", "applepay.data")
        member("signature", "applepay.signature")
        json += Array(",\"header\":{".utf8)
        member("publicKeyHash", "applepay.header.publicKeyHash", first: true)
        member("transactionId", "applepay.header.transactionId")
        member(keyFields[0] == "applepay.header.wrappedKey" ? "wrappedKey" : "ephemeralPublicKey", keyFields[0])
        if fields["applepay.header.applicationData"] != nil { member("applicationData", "applepay.header.applicationData") }
        json += Array("}}".utf8)
        self.paypageID = paypageID
        self.reportGroup = fields["reportGroup"]!
        self.id = fields["id"]!
        self.orderID = fields["orderId"].flatMap { $0.isEmpty ? nil : $0 }
        self.tokenJSON = json
    }

    /// Percent-decoding with `+` as a space, as HTML forms encode; nil for broken escapes or UTF-8.
    /// `characters` counts Unicode scalars, as the cnpAPI schema's lengths (XML's characters) do.
    static func decode(_ bytes: ArraySlice<UInt8>) -> (text: String, characters: Int)? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var characters = 0
        var index = bytes.startIndex
        while index < bytes.endIndex {
            var byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "%") {
                guard index + 1 < bytes.endIndex, let upper = hexDigit(bytes[index]), let lower = hexDigit(bytes[index + 1])
                else { return nil }
                byte = upper << 4 | lower
                index += 2
            } else if byte == UInt8(ascii: "+") {
                byte = UInt8(ascii: " ")
            }
            // Every byte but a UTF-8 continuation byte starts a scalar (the validation below
            // refuses what is not UTF-8).
            if byte & 0xC0 != 0x80 { characters += 1 }
            output.append(byte)
        }
        guard let text = String(validating: output, as: UTF8.self) else { return nil }
        return (text, characters)
    }

    /// One hex digit's value. Not `UInt8(_:radix:)`, which also takes a sign: `%+F` is no escape.
    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
