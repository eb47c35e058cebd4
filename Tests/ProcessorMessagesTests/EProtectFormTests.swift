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
        #expect(EProtectForm.decode(Array(encoded.utf8)) == decoded)
    }

    /// `UInt8("+F", radix: 16)` is 15 and `UInt8("-0", radix: 16)` is 0: a sign is no hex digit.
    @Test(arguments: ["%+F", "%-0", "%+0", "%G0", "%0", "%", "a%2", "% 1", "%C3", "%ED%A0%80"])
    func refusesWhatIsNotAnEscapeOrNotUTF8(encoded: String) {
        #expect(EProtectForm.decode(Array(encoded.utf8)) == nil, "\(encoded)")
    }

    @Test func aSignedEscapeRefusesTheWholeForm() {
        let form =
            "paypageId=pp1&reportGroup=r&id=i%+1&applepay.data=d&applepay.signature=s&applepay.version=EC_v1"
            + "&applepay.header.publicKeyHash=h&applepay.header.transactionId=t&applepay.header.ephemeralPublicKey=k"
        #expect(throws: EProtectForm.Refusal.self) { try EProtectForm(body: Array(form.utf8)) }
        #expect(throws: Never.self) { try EProtectForm(body: Array(form.replacingOccurrences(of: "%+1", with: "%21").utf8)) }
    }
}
