import Foundation
import PaywardenPrimitives
import PaywardenTesting
import Testing

@testable import ApplePay

/// The typed payload: read once from the bytes by the tokens' strict reader, each form's fields,
/// the secrets ``Sensitive``, the bytes kept as they came.
@Suite("Decrypted payment payload")
struct DecryptedPaymentTests {
    @Test func threeDSecure() throws {
        let bytes = PaymentPayloads.threeDSecure(pan: "4111111111111111", cryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=", eci: "7")
        let payment = try #require(DecryptedPayment(json: bytes))
        #expect(payment.json == bytes)
        #expect(payment.applicationPrimaryAccountNumber?.revealed == "4111111111111111")
        #expect(payment.applicationExpirationDate == "291231" && payment.currencyCode == "978")
        #expect(payment.transactionAmount == "1999" && payment.cardholderName == "Jane Appleseed")
        #expect(payment.deviceManufacturerIdentifier == "040010030273" && payment.paymentDataType == "3DSecure")
        #expect(payment.credential.onlinePaymentCryptogram?.revealed == "AgAAAAAABk4DWZ4C28yUQAAAAAA=")
        #expect(payment.credential.eciIndicator == "7")
        #expect(payment.merchantTokenIdentifier == nil && payment.merchantTokenMetadata == nil && payment.authenticationResponses.isEmpty)
        let shown = "\(payment) \(String(reflecting: payment))"
        #expect(!shown.contains("4111111111111111") && !shown.contains("AgAAAAAABk4DWZ4C28yUQAAAAAA="), "\(shown)")
    }

    /// The payload's bytes hold the account number and the cryptogram in clear: neither a
    /// description, a debug description nor `dump` shows them, of the payload or of its token.
    @Test func printingThePayloadOrItsTokenShowsNoCardData() throws {
        let pan = "4111111111111111"
        let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="
        let bytes = PaymentPayloads.threeDSecure(pan: pan, cryptogram: cryptogram)
        let payment = try #require(DecryptedPayment(json: bytes))
        let token = try DecryptedPaymentToken(
            paymentData: bytes, version: .ecV1, transactionID: "ab", publicKeyHash: "h", signingTime: Date(), keyID: "k",
            merchantIdentifierHash: "m")
        var dumped = ""
        dump(payment, to: &dumped)
        dump(token, to: &dumped)
        for text in ["\(payment)", String(reflecting: payment), "\(token)", String(reflecting: token), dumped] {
            #expect(!text.contains(pan) && !text.contains(cryptogram) && !text.contains("52, 49, 49, 49"), "\(text)")
        }
    }

    @Test func emv() throws {
        let payment = try #require(DecryptedPayment(json: PaymentPayloads.emv()))
        guard case .emv(let data, let pin) = payment.credential else {
            Issue.record("not read as EMV: \(payment.credential)")
            return
        }
        #expect(data.revealed.hasPrefix("nyYIAAAA") && pin?.revealed == "0A1B2C3D4E5F6071")
        #expect(payment.credential.onlinePaymentCryptogram == nil && payment.paymentDataType == "EMV")
    }

    @Test func merchantTokenWithAuthenticationResponses() throws {
        let payment = try #require(DecryptedPayment(json: PaymentPayloads.merchantToken(authenticationResponses: true)))
        #expect(payment.merchantTokenIdentifier == "DNITHE302409093402145671")
        let responses = payment.authenticationResponses
        #expect(responses.map(\.merchantIdentifier) == ["merchant.com.example.a", "merchant.com.example.b"])
        #expect(responses.map { $0.authenticationData.revealed } == ["AAbbCCddEEff", "GGhhIIjjKKll"])
        #expect(responses.map(\.transactionAmount) == ["1250", "1250"])
        // Stored as Foundation wrote it with sorted keys and unescaped slashes, so records keep their bytes.
        let metadata = try #require(payment.merchantTokenMetadata).bytes
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(PaymentPayloads.merchantToken(authenticationResponses: true))) as? [String: Any])
        let foundation = try JSONSerialization.data(
            withJSONObject: try #require(object["merchantTokenMetadata"]), options: [.sortedKeys, .withoutEscapingSlashes])
        #expect(metadata == Array(foundation), "\(String(decoding: metadata, as: UTF8.self))")
    }

    @Test func numbersAreKeptAsWrittenAndOtherTypesReadAsAbsent() throws {
        let text =
            #"{"applicationPrimaryAccountNumber":4111111111111111,"transactionAmount":"10.50","#
            + #""paymentData":{"onlinePaymentCryptogram":"AA==","eciIndicator":5},"merchantTokenIdentifier":""}"#
        let bytes = Array(text.utf8)
        let payment = try #require(DecryptedPayment(json: bytes))
        #expect(payment.applicationPrimaryAccountNumber == nil && payment.transactionAmount == "10.50")
        #expect(payment.credential.eciIndicator == "5" && payment.merchantTokenIdentifier == nil)
    }

    @Test(arguments: ["[]", "", "{\"a\":1,\"a\":2}", "not json", "{} {}"])
    func anythingButOneObjectIsRefused(_ text: String) {
        #expect(DecryptedPayment(json: Array(text.utf8)) == nil)
    }

    @Test func decryptedTokenCarriesItsPayment() throws {
        let token = try DecryptedPaymentToken(
            paymentData: PaymentPayloads.emv(), version: .ecV1, transactionID: "00", publicKeyHash: "", signingTime: Date(), keyID: "",
            merchantIdentifierHash: "")
        #expect(token.payment?.json == token.paymentData && token.payment?.paymentDataType == "EMV")
    }

    @Test func maskingKeepsShapeAndSortsMembers() throws {
        let masked = String(decoding: try #require(PaymentDataMasking.masked(PaymentPayloads.emv())), as: UTF8.self)
        #expect(
            masked.hasPrefix(#"{"applicationExpirationDate":"281130","applicationPrimaryAccountNumber":"************1232","#), "\(masked)")
        #expect(masked.contains(#""emvData":"<masked 56 characters>""#) && masked.contains(#""encryptedPINData":"<masked 16 characters>""#))
        #expect(masked.contains(#""transactionAmount":88800"#))
        #expect(PaymentDataMasking.masked(Array("[1]".utf8)) == nil)
    }
}
