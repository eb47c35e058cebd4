import ApplePay
import Foundation
import NIOCore
import PaywardenServices
import Testing

@testable import PaywardenServer

/// The decrypt response's envelope writes itself; JSONEncoder (sorted keys, slashes unescaped)
/// is the reference it must match byte for byte, whatever its strings hold.
@Suite("JSON responses")
struct JSONResponsesTests {
    static func facts(_ text: String) -> DecryptedTokenFacts {
        DecryptedTokenFacts(
            // swift-format-ignore: NeverUseForceTry
            try! DecryptedPaymentToken(
                paymentData: Array(#"{"a":1}"#.utf8), version: .ecV1, transactionID: "0a" + text, publicKeyHash: "ab/+cd==" + text,
                signingTime: Date(timeIntervalSince1970: 1_700_000_000), keyID: "k\(text)", merchantIdentifierHash: text))
    }

    static let strings = [
        "", "plain", "quote\" backslash\\ slash/", "\u{01}\u{08}\u{09}\u{0A}\u{0B}\u{0C}\u{0D}\u{1F}\u{7F}", "é ü 😀", "\u{2028}",
    ]

    @Test(arguments: strings)
    func selfEncodedEnvelopeMatchesJSONEncoder(_ text: String) throws {
        let facts = Self.facts(text)
        let written = Array(buffer: try JSONResponses.splice(key: "paymentData", verbatim: Array(#"{"a":1}"#.utf8), envelope: facts))
        // The reference: the envelope through JSONEncoder, spliced the generic way.
        let members = try JSONResponses.encoder.encode(facts)
        let reference = Array(#"{"paymentData":{"a":1},"#.utf8) + Array(members.dropFirst())
        #expect(written == reference, "\(String(decoding: written, as: UTF8.self)) vs \(String(decoding: reference, as: UTF8.self))")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(written)) as? [String: Any])
        #expect((object["key"] as? [String: Any])?["merchantIdentifierHash"] as? String == text)
    }

    @Test(arguments: strings)
    func redemptionEnvelopeMatchesJSONEncoder(_ text: String) throws {
        let entries: [RedemptionFacts.AuthenticationResponseFacts] = [
            .init(merchantIdentifier: text, transactionAmount: "100", authenticationData: "A/+" + text),
            .init(merchantIdentifier: "b" + text, transactionAmount: "0", authenticationData: "B=="),
        ]
        for (identifier, eligible, count, responses) in [(nil, false, 0, []), (text, true, 12_345, entries), (nil, true, 1, [entries[0]])]
            as [(String?, Bool, Int, [RedemptionFacts.AuthenticationResponseFacts])]
        {
            let facts = RedemptionFacts(
                authenticationResponses: responses,
                token: .init(
                    version: "EC_v1" + text, transactionId: text, publicKeyHash: "a/b+" + text, signingTime: "2026-11-25T16:00:00Z"),
                highValueToken: .init(
                    token: "4" + text, format: "T", responseCode: "801", message: text, kind: "dpan", recurringEligible: eligible,
                    merchantTokenIdentifier: identifier),
                registration: .init(redemptions: count, expiresAt: text))
            let written = Array(buffer: try JSONResponses.splice(key: "paymentData", verbatim: Array("{}".utf8), envelope: facts))
            let reference = Array(#"{"paymentData":{},"#.utf8) + Array(try JSONResponses.encoder.encode(facts).dropFirst())
            #expect(written == reference, "\(String(decoding: written, as: UTF8.self)) vs \(String(decoding: reference, as: UTF8.self))")
        }
    }
}
