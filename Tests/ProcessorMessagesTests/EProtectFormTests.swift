import Foundation
import Testing

@testable import ProcessorMessages

/// The eProtect form's percent-decoding: exactly two hex digits after each `%`, `+` as a space,
/// UTF-8 throughout; anything else refuses the form.
@Suite struct EProtectFormTests {
    @Test(arguments: [
        ("a%20b", "a b"), ("a+b", "a b"), ("%2B%2b", "++"), ("%C3%A9t%C3%A9", "été"), ("%7e~", "~~"), ("", ""),
    ])
    func decodesEscapes(encoded: String, decoded: String) {
        #expect(EProtectForm.decode(ArraySlice(encoded.utf8))?.text == decoded)
    }

    /// `UInt8("+F", radix: 16)` is 15 and `UInt8("-0", radix: 16)` is 0: a sign is no hex digit.
    @Test(arguments: ["%+F", "%-0", "%+0", "%G0", "%0", "%", "a%2", "% 1", "%C3", "%ED%A0%80"])
    func refusesWhatIsNotAnEscapeOrNotUTF8(encoded: String) {
        #expect(EProtectForm.decode(ArraySlice(encoded.utf8))?.text == nil, "\(encoded)")
    }

    @Test func aSignedEscapeRefusesTheWholeForm() {
        let form =
            "paypageId=pp1&reportGroup=r&id=i%+1&applepay.data=d&applepay.signature=s&applepay.version=EC_v1"
            + "&applepay.header.publicKeyHash=h&applepay.header.transactionId=t&applepay.header.ephemeralPublicKey=k"
        #expect(throws: EProtectForm.Refusal.self) { try EProtectForm(body: Array(form.utf8)) }
        #expect(throws: Never.self) { try EProtectForm(body: Array(form.replacingOccurrences(of: "%+1", with: "%21").utf8)) }
    }

    /// The schema's lengths are characters, not bytes: 25 two-byte `é` fill reportGroup (1 to 25),
    /// 26 do not. Empty pairs and a name without `=` are skipped or read as empty, as forms allow.
    @Test func lengthsCountCharactersAndEmptyPairsAreSkipped() throws {
        func form(reportGroup: String) -> [UInt8] {
            Array(
                ("&&paypageId=pp1&reportGroup=\(reportGroup)&id=i&applepay.data=d&applepay.signature=s&applepay.version=EC_v1"
                    + "&applepay.header.publicKeyHash=h&applepay.header.transactionId=t&applepay.header.ephemeralPublicKey=k&orderId&")
                    .utf8)
        }
        let parsed = try EProtectForm(body: form(reportGroup: String(repeating: "%C3%A9", count: 25)))
        #expect(parsed.reportGroup == String(repeating: "é", count: 25))
        #expect(parsed.orderID == nil)
        #expect(throws: EProtectForm.Refusal.self) { try EProtectForm(body: form(reportGroup: String(repeating: "%C3%A9", count: 26))) }
        let twice = form(reportGroup: "r") + Array("&id=j".utf8)
        #expect(throws: EProtectForm.Refusal.self) { try EProtectForm(body: twice) }
    }

    /// The token the form carries is the JSON object its fields spell, whatever characters they
    /// hold (quotes, backslashes, control characters, non-ASCII), with applicationData only when sent.
    @Test(arguments: [nil, "ab%22cd%5C%0A%01%C3%A9/+x"] as [String?])
    func theTokenIsTheJSONOfItsFields(applicationData: String?) throws {
        var form =
            "paypageId=pp1&reportGroup=r&id=i&applepay.data=d%2F%2B%3D&applepay.signature=s%22q%5C&applepay.version=EC_v1"
            + "&applepay.header.publicKeyHash=h&applepay.header.transactionId=t&applepay.header.ephemeralPublicKey=k%09"
        if let applicationData { form += "&applepay.header.applicationData=" + applicationData }
        let parsed = try EProtectForm(body: Array(form.utf8))
        let token = try #require(try JSONSerialization.jsonObject(with: Data(parsed.tokenJSON)) as? [String: Any])
        #expect(token.count == 4)
        #expect(token["version"] as? String == "EC_v1")
        #expect(token["data"] as? String == "d/+=")
        #expect(token["signature"] as? String == "s\"q\\")
        let header = try #require(token["header"] as? [String: String])
        var expected = ["publicKeyHash": "h", "transactionId": "t", "ephemeralPublicKey": "k\t"]
        if let applicationData { expected["applicationData"] = EProtectForm.decode(ArraySlice(applicationData.utf8))?.text }
        #expect(header == expected)
    }
}
