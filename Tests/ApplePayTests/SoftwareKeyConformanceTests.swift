import ApplePay
import Foundation
import KeyCustody
import PaywardenPrimitives
import PaywardenTesting
import Testing

/// The real Apple vectors decrypted with ``SoftwareMerchantKeys``: the in-memory key operations the
/// protocol tests use are checked against Apple's own tokens, byte for byte, as the HSM's are.
struct SoftwareKeyConformanceTests {
    @Test(arguments: ConformanceTests.decryptable)
    func decryptsByteForByteWithoutAnHSM(vector: String) async throws {
        try #require(ConformanceVectors.available, "vectors absent")
        let directory = ConformanceVectors.directory + "/" + vector
        let partyV: [UInt8]
        if FileManager.default.fileExists(atPath: directory + "/merchant_cert.pem") {
            let certificate = try MerchantCertificate(bytes: Array(try ConformanceVectors.data(vector, "merchant_cert.pem")))
            partyV = try #require(certificate.merchantIdentifierHash.flatMap(Hex.decode))
        } else {
            let merchantID = try String(contentsOfFile: directory + "/merchant_id.txt", encoding: .utf8)
            partyV = TokenForge.merchantIdentifierHash(merchantID.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let keys = SoftwareMerchantKeys()
        let recipient = try keys.add(
            pem: String(contentsOfFile: directory + "/merchant_key.pem", encoding: .utf8), merchantIdentifierHash: partyV)
        let decrypter = PaymentTokenDecrypter(
            verifier: TokenSignatureVerifier(anchors: .apple), directory: keys, operations: keys, replayCache: InMemoryReplayCache()
        )
        let at = try #require(ISO8601DateFormatter().date(from: try ConformanceTests.signingTime(vector)))
        let result = try await decrypter.decrypt(json: Array(try ConformanceVectors.data(vector, "token.json")), at: at)
        #expect(result.paymentData == Array(try ConformanceVectors.data(vector, "expected.json")), "\(vector)")
        #expect(result.publicKeyHash == recipient.publicKeyHash)

        // A forgotten key selects nothing.
        keys.remove(recipient)
        let refused = await #expect(throws: PaymentTokenError.self) {
            _ = try await decrypter.decrypt(json: Array(try ConformanceVectors.data(vector, "token.json")), at: at)
        }
        #expect(refused?.code == .unknownPublicKeyHash, "\(String(describing: refused))")
    }
}
