import Foundation
import Testing

@testable import ProcessorMessages

@Suite("MercuryPay JSON")
struct MercuryPayTests {
    func body(_ overrides: [String: String] = [:], omit: Set<String> = [], extra: String = "") -> [UInt8] {
        var fields: [(String, String)] = [
            ("OperatorID", "op-1"), ("InvoiceNo", "10042"), ("Purchase", "10.00"), ("Tax", "0.80"),
            ("TokenType", "RegistrationID"), ("RecordNo", "5760311187832973287"), ("Frequency", "OneTime"),
        ]
        fields = fields.filter { !omit.contains($0.0) }.map { ($0.0, overrides[$0.0] ?? $0.1) }
        let members = fields.map { "\"\($0.0)\":\"\($0.1)\"" } + (extra.isEmpty ? [] : [extra])
        return Array(("{" + members.joined(separator: ",") + "}").utf8)
    }

    @Test func parsesASaleByRecordNoKeepingUnknownFields() throws {
        let request = try MercuryPayRequest.parse(try Fixture.bytes("mercurypay-sale-by-recordno.json"), operation: .saleByRecordNo)
        #expect(request.tokenType == .registrationID && request.frequency == .oneTime)
        #expect(request.invoiceNo == "10042" && request.purchase == "10.00" && request.tax == "0.80")
        #expect(request.body["Memo"]?.stringValue == "Paywarden test POS 1.0")
        #expect(!request.description.contains("5760311187832973287"))
        #expect(MercuryPayOperation(path: "/PaymentsAPI/Credit/AuthorizeByRecordNo") == .authorizeByRecordNo)
    }

    @Test(arguments: ["RegistrationID", "RegistrationId"])
    func acceptsBothSpellingsOfRegistrationID(_ spelling: String) throws {
        #expect(try MercuryPayRequest.parse(body(["TokenType": spelling]), operation: .authorizeByRecordNo).tokenType == .registrationID)
    }

    @Test func acceptsAnOmniTokenOfDigits() throws {
        let request = try MercuryPayRequest.parse(
            body(["TokenType": "OmniToken", "RecordNo": "1111000276870123", "Frequency": "Recurring"]), operation: .saleByRecordNo)
        #expect(request.tokenType == .omniToken && request.frequency == .recurring)
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        let label: String
        let body: [UInt8]
        let code: ProcessorMessageError.Code
        let field: String?
        var testDescription: String { label }
    }

    static let refusals: [Refusal] = {
        let make = MercuryPayTests()
        return [
            Refusal(label: "not JSON", body: Array("{\"a\":".utf8), code: .malformedJSON, field: nil),
            Refusal(label: "not an object", body: Array("[]".utf8), code: .unexpectedRoot, field: nil),
            Refusal(
                label: "duplicate member", body: Array("{\"Purchase\":\"1.00\",\"Purchase\":\"2.00\"}".utf8), code: .duplicateField,
                field: "Purchase"),
            Refusal(label: "missing OperatorID", body: make.body(omit: ["OperatorID"]), code: .missingField, field: "OperatorID"),
            Refusal(
                label: "OperatorID too long", body: make.body(["OperatorID": String(repeating: "o", count: 51)]), code: .fieldTooLong,
                field: "OperatorID"),
            Refusal(label: "missing InvoiceNo", body: make.body(omit: ["InvoiceNo"]), code: .missingField, field: "InvoiceNo"),
            Refusal(label: "InvoiceNo too long", body: make.body(["InvoiceNo": "12345678901"]), code: .fieldTooLong, field: "InvoiceNo"),
            Refusal(label: "InvoiceNo with symbols", body: make.body(["InvoiceNo": "12;34"]), code: .invalidFormat, field: "InvoiceNo"),
            Refusal(label: "Purchase without cents", body: make.body(["Purchase": "10"]), code: .invalidFormat, field: "Purchase"),
            Refusal(label: "Purchase with three places", body: make.body(["Purchase": "10.000"]), code: .invalidFormat, field: "Purchase"),
            Refusal(label: "Purchase negative", body: make.body(["Purchase": "-1.00"]), code: .invalidFormat, field: "Purchase"),
            Refusal(label: "Purchase zero", body: make.body(["Purchase": "0.00"]), code: .invalidValue, field: "Purchase"),
            Refusal(label: "Purchase too large", body: make.body(["Purchase": "123456789.00"]), code: .invalidFormat, field: "Purchase"),
            Refusal(
                label: "Purchase as a number", body: make.body(omit: ["Purchase"], extra: "\"Purchase\":10.00"), code: .invalidFormat,
                field: "Purchase"),
            Refusal(label: "Tax malformed", body: make.body(["Tax": "0.8"]), code: .invalidFormat, field: "Tax"),
            Refusal(label: "missing TokenType", body: make.body(omit: ["TokenType"]), code: .missingField, field: "TokenType"),
            Refusal(label: "MToken", body: make.body(["TokenType": "MToken"]), code: .unsupportedTokenType, field: "TokenType"),
            Refusal(label: "missing RecordNo", body: make.body(omit: ["RecordNo"]), code: .missingField, field: "RecordNo"),
            Refusal(label: "empty RecordNo", body: make.body(["RecordNo": ""]), code: .fieldTooShort, field: "RecordNo"),
            Refusal(
                label: "registration ID too long", body: make.body(["RecordNo": String(repeating: "1", count: 513)]), code: .fieldTooLong,
                field: "RecordNo"),
            Refusal(
                label: "OmniToken not digits", body: make.body(["TokenType": "OmniToken", "RecordNo": "abc"]), code: .invalidFormat,
                field: "RecordNo"),
            Refusal(label: "missing Frequency", body: make.body(omit: ["Frequency"]), code: .missingField, field: "Frequency"),
            Refusal(label: "Frequency unknown", body: make.body(["Frequency": "Weekly"]), code: .invalidValue, field: "Frequency"),
            Refusal(
                label: "card data beside the token", body: make.body(extra: "\"AcctNo\":\"4111111111111111\""), code: .unexpectedField,
                field: "AcctNo"),
        ]
    }()

    @Test(arguments: refusals)
    func refusesWithANamedError(_ refusal: Refusal) {
        let error = messageError { _ = try MercuryPayRequest.parse(refusal.body, operation: .saleByRecordNo) }
        #expect(error?.code == refusal.code, "\(error?.description ?? "no error")")
        #expect(error?.field == refusal.field, "\(error?.description ?? "no error")")
        #expect(!(error?.description.contains("4111111111111111") ?? false))
    }

    @Test func forwardsCardDataInPlaceOfTheToken() throws {
        let request = try MercuryPayRequest.parse(try Fixture.bytes("mercurypay-sale-by-recordno.json"), operation: .saleByRecordNo)
        let forwarded = MercuryPayForwarding.upstreamRequest(request, card: try TestCards.applePay())
        #expect(forwarded.path == "/PaymentsAPI/Credit/Sale")
        #expect(
            forwarded.body.members?.map(\.key) == [
                "OperatorID", "InvoiceNo", "Purchase", "Tax", "AcctNo", "ExpDate", "Frequency", "Memo", "RefNo",
            ])
        #expect(forwarded.body["AcctNo"]?.stringValue == TestCards.pan && forwarded.body["ExpDate"]?.stringValue == "1230")
        #expect(!forwarded.cryptogramSent)
        #expect(!forwarded.description.contains(TestCards.pan))
        let text = String(decoding: forwarded.body.serialized(), as: UTF8.self)
        #expect(!text.contains("RecordNo") && !text.contains("TokenType") && !text.contains(TestCards.cryptogram))

        let options = MercuryPayForwarding.Options(cryptogramField: "Cryptogram", eciField: "ECI", accountSource: "Keyed")
        let authorize = try MercuryPayRequest.parse(body(), operation: .authorizeByRecordNo)
        let withCryptogram = MercuryPayForwarding.upstreamRequest(authorize, card: try TestCards.applePay(), options: options)
        #expect(withCryptogram.path == "/PaymentsAPI/Credit/PreAuth" && withCryptogram.cryptogramSent)
        #expect(withCryptogram.body["Cryptogram"]?.stringValue == TestCards.cryptogram && withCryptogram.body["ECI"]?.stringValue == "07")
        #expect(withCryptogram.body["AccountSource"]?.stringValue == "Keyed")
    }

    @Test func rewritesTheResponseWithTheTokenAndAMaskedAccount() throws {
        let response = try MercuryPayResponseRewriter.clientResponse(
            try Fixture.bytes("mercurypay-sale-response.json"), token: "4761730000100018", forwarded: try TestCards.applePay())
        #expect(response["RecordNo"]?.stringValue == "4761730000100018")
        #expect(response["AcctNo"]?.stringValue == "XXXXXXXXXXXX0010")
        #expect(response["CmdStatus"]?.stringValue == "Approved" && response["AuthCode"]?.stringValue == "001234")
        let text = String(decoding: response.serialized(), as: UTF8.self)
        #expect(!text.contains(TestCards.pan) && !text.contains("UPSTREAM-OWN-TOKEN"))
    }

    @Test func returnsNoTokenOnADecline() throws {
        let declined = Array(
            #"{"CmdStatus":"Declined","DSIXReturnCode":"000000","TextResponse":"DECLINE","AcctNo":"4761739001010010","RecordNo":"X"}"#.utf8)
        let response = try MercuryPayResponseRewriter.clientResponse(declined, token: "4761730000100018", forwarded: nil)
        #expect(response["RecordNo"] == nil)
        #expect(response["AcctNo"]?.stringValue == "XXXXXXXXXXXX0010")
    }

    @Test(arguments: MercuryPayErrorResponse.TokenError.allCases)
    func buildsTokenErrors(_ error: MercuryPayErrorResponse.TokenError) throws {
        let body = MercuryPayErrorResponse.body(error, invoiceNo: "10042")
        #expect(body["CmdStatus"]?.stringValue == "Error")
        #expect(body["DSIXReturnCode"]?.stringValue == error.rawValue)
        #expect(body["TextResponse"]?.stringValue == error.textResponse)
        #expect(body["InvoiceNo"]?.stringValue == "10042" && body["RecordNo"] == nil)
        let reparsed = try ProcessorJSON.parse(body.serialized(), format: .mercuryPay)
        #expect(reparsed == body)
    }

    @Test func errorTextMatchesTheSpecification() {
        #expect(MercuryPayErrorResponse.TokenError.decryptionServiceUnavailable.textResponse == "Decryption Service Unavailable")
        #expect(MercuryPayErrorResponse.TokenError.tokenServiceUnavailable.textResponse == "Token Service Unavailable")
    }

    @Test func jsonParserIsStrictAndBounded() {
        let cases: [(String, ProcessorMessageError.Code)] = [
            ("{\"a\":\"\\ud800\"}", .malformedJSON), ("{\"a\":\"\u{1}\"}", .malformedJSON), ("{\"a\":01}", .malformedJSON),
            ("{\"a\":1,}", .malformedJSON), ("{\"a\":1} x", .malformedJSON), ("{'a':1}", .malformedJSON), ("", .malformedJSON),
            (String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000), .malformedJSON),
        ]
        for (text, code) in cases {
            #expect(messageError { _ = try ProcessorJSON.parse(Array(text.utf8), format: .mercuryPay) }?.code == code, "\(text.prefix(20))")
        }
        let big = "{\"a\":\"" + String(repeating: "x", count: 70_000) + "\"}"
        #expect(messageError { _ = try ProcessorJSON.parse(Array(big.utf8), format: .mercuryPay) }?.code == .malformedJSON)
        let escaped = "{\"a\":\"\\u00e9\\ud83d\\ude00\\n\",\"b\":[true,false,null,-1.5e3]}"
        let value = try? ProcessorJSON.parse(Array(escaped.utf8), format: .mercuryPay)
        #expect(value?["a"]?.stringValue == "é😀\n")
        #expect(value?["b"] == .array([.bool(true), .bool(false), .null, .number("-1.5e3")]))
    }
}
