import Foundation
import PaywardenTesting
import Testing

@testable import ApplePay

/// Multi-merchant payloads (`authenticationResponses`, docs/apple-pay.md "Multi-merchant payments"):
/// each entry read and checked, a payload Paywarden cannot rely on refused whole, from the forged
/// token to the decrypter's answer.
@Suite("Multi-merchant payloads")
struct MultiMerchantPayloadTests {
    @Test func everyEntryIsReadInApplesOrder() throws {
        let payment = try #require(try DecryptedPayment.read(PaymentPayloads.multiMerchant()))
        let entries = payment.authenticationResponses
        #expect(entries.map(\.merchantIdentifier) == PaymentPayloads.submerchants.map(\.merchantIdentifier))
        #expect(entries.map(\.authenticationData.revealed) == PaymentPayloads.submerchants.map(\.cryptogram))
        #expect(entries.map(\.transactionAmount) == ["15000", "30000", "5000"])
        // The coordinator's own cryptogram is still the payment's.
        #expect(payment.credential.onlinePaymentCryptogram?.revealed == "AgAAAAAABk4DWZ4C28yUQAAAAAA=")
        // Cryptograms never reach a description.
        #expect(!String(describing: entries).contains(PaymentPayloads.submerchants[0].cryptogram))
    }

    @Test func aPayloadWithoutThemIsAsBefore() throws {
        let payment = try #require(try DecryptedPayment.read(PaymentPayloads.threeDSecure()))
        #expect(payment.authenticationResponses.isEmpty)
    }

    @Test func membersAppleMayAddAreIgnored() throws {
        let entries = #"[{"merchantIdentifier":"m1","authenticationData":"AAAA","transactionAmount":"100","future":{"x":[1]}}]"#
        let payment = try #require(try DecryptedPayment.read(PaymentPayloads.multiMerchant(authenticationResponses: entries)))
        #expect(payment.authenticationResponses.map(\.merchantIdentifier) == ["m1"])
    }

    /// What cannot be relied on, each refused with the one code and a message that names the fault.
    @Test(arguments: [
        (#"{"merchantIdentifier":"m1"}"#, "is not an array"),
        ("[]", "is empty"),
        ("[1]", "entry 0 is not an object"),
        (#"[{"authenticationData":"AAAA","transactionAmount":"100"}]"#, "entry 0 has no merchantIdentifier"),
        (
            #"[{"merchantIdentifier":"has space","authenticationData":"AAAA","transactionAmount":"100"}]"#,
            "entry 0 has no merchantIdentifier"
        ),
        (#"[{"merchantIdentifier":"m1","transactionAmount":"100"}]"#, "entry 0 has no authenticationData"),
        (#"[{"merchantIdentifier":"m1","authenticationData":"AA*A=","transactionAmount":"100"}]"#, "entry 0 has no authenticationData"),
        (#"[{"merchantIdentifier":"m1","authenticationData":"AAAA","transactionAmount":"2.50"}]"#, "entry 0 has no transactionAmount"),
        (#"[{"merchantIdentifier":"m1","authenticationData":"AAAA","transactionAmount":"-5"}]"#, "entry 0 has no transactionAmount"),
        (#"[{"merchantIdentifier":"Coordinator","authenticationData":"AAAA","transactionAmount":"5"}]"#, "entry 0 is named `coordinator`"),
        (#"[{"merchantIdentifier":"m1","authenticationData":"AAAA"}]"#, "entry 0 has no transactionAmount"),
        (
            #"[{"merchantIdentifier":"M1","authenticationData":"AAAA","transactionAmount":"1"},"#
                + #"{"merchantIdentifier":"m1","authenticationData":"BBBB","transactionAmount":"1"}]"#,
            "entry 1 repeats another entry's merchantIdentifier"
        ),
        (
            #"[{"merchantIdentifier":"m1","authenticationData":"AAAA","transactionAmount":"30000"},"#
                + #"{"merchantIdentifier":"m2","authenticationData":"BBBB","transactionAmount":"20001"}]"#,
            "amounts add up to 50001, more than the payment's transactionAmount 50000"
        ),
    ])
    func whatCannotBeReliedOnIsRefused(entries: String, fault: String) throws {
        let payload = PaymentPayloads.multiMerchant(authenticationResponses: entries)
        let error = try #require(throws: PaymentTokenError.self) { try DecryptedPayment.read(payload) }
        #expect(error.code == .authenticationResponsesInvalid && error.message.contains(fault), "\(error.message)")
        // The lenient reader the vault uses for what it holds refuses it too: never a cryptogram from a guess.
        #expect(DecryptedPayment(json: payload) == nil)
    }

    @Test func moreEntriesThanAnyPaymentSheetAreRefused() throws {
        let entries = (0...64).map { #"{"merchantIdentifier":"m\#($0)","authenticationData":"AAAA","transactionAmount":"1"}"# }
        let payload = PaymentPayloads.multiMerchant(authenticationResponses: "[" + entries.joined(separator: ",") + "]")
        let error = try #require(throws: PaymentTokenError.self) { try DecryptedPayment.read(payload) }
        #expect(error.message.contains("has 65 entries"))
    }

    @Test func theSumNeedsTheTopLevelAmount() throws {
        let payload = PaymentPayloads.multiMerchant(transactionAmount: #""500.00""#)
        let error = try #require(throws: PaymentTokenError.self) { try DecryptedPayment.read(payload) }
        #expect(error.message.contains("cannot be checked"))
    }

    /// Through the decrypter: a forged, Apple-signed token carrying the entries decrypts byte for
    /// byte; one whose entries cannot be relied on is refused after decryption, its transaction id
    /// spent (it was decrypted: never again).
    @Test(arguments: MerchantKeyBackend.allCases)
    func theDecrypterAnswersOrRefusesTheWholePayload(backend: MerchantKeyBackend) async throws {
        let env = try await DecryptionTestEnvironment(backend)
        let merchant = try await env.merchant("merchant.com.example.platform")
        let payload = PaymentPayloads.multiMerchant()
        let result = try await env.decrypter.decrypt(json: try env.ecToken(to: merchant, payload: payload))
        #expect(result.paymentData == payload && result.payment?.authenticationResponses.count == 3)

        let over = PaymentPayloads.multiMerchant(transactionAmount: "49999")
        let token = try env.ecToken(to: merchant, payload: over)
        let refused = await #expect(throws: PaymentTokenError.self) { try await env.decrypter.decrypt(json: token) }
        #expect(refused?.code == .authenticationResponsesInvalid && refused?.category == .refused)
        let again = await #expect(throws: PaymentTokenError.self) { try await env.decrypter.decrypt(json: token) }
        #expect(again?.code == .replayedTransaction)
        await env.close()
    }
}
