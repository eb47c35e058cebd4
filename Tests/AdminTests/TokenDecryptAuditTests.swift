import Crypto
import Foundation
import KeyCustody
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// `paywarden token decrypt` reads card data outside the service, with no replay ledger and, with
/// `--at`, long after the token was made: every run is audited (who, which key, whether the data
/// was revealed, a keyed reference to the transaction), and the audit line holds no card data.
@Suite(.serialized, .releasesTestResources)
struct TokenDecryptAuditTests {
    @Test func everyDecryptionByTheCLIIsAudited() async throws {
        let env = try await AdminTestEnvironment.make()
        let merchant = P256.KeyAgreement.PrivateKey()
        let keyPath = try env.write(Array(merchant.pemRepresentation.utf8), named: "merchant-key.pem")
        let imported = try env.paywarden("keys", "import", "--key", keyPath, "--merchant-id", "merchant.com.audit", "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        let listed = try AdminTestEnvironment.key(in: imported)
        let keyID = listed.id
        let pki = DecryptionTestEnvironment.sharedPKI
        let pan = "4111111111111111"
        let token = try TokenForge(pki: pki).ecV1(
            payload: PaymentPayloads.threeDSecure(pan: pan), merchant: merchant.publicKey,
            merchantIdentifierHash: TokenForge.merchantIdentifierHash("merchant.com.audit")
        )
        .withPublicKeyHash(listed.publicKeyHash)
        let tokenPath = try env.write(token, named: "token.json")
        let roots = ["PAYWARDEN_TRUST_ROOTS": try pki.writeRoot(to: env.home)]

        let revealed = try env.paywarden("token", "decrypt", tokenPath, "--reveal", "--json", environment: roots)
        #expect(revealed.status == 0 && revealed.stdout.contains(pan), "\(revealed.stderr)")
        let transactionID = try #require(
            ((try JSONSerialization.jsonObject(with: Data(revealed.stdout.utf8)) as? [String: Any])?["token"] as? [String: Any])?[
                "transactionId"] as? String)
        let masked = try env.paywarden(
            "token", "decrypt", tokenPath, "--at", ISO8601DateFormatter().string(from: Date()), environment: roots)
        #expect(masked.status == 0 && !masked.stdout.contains(pan), "\(masked.stderr)")
        let refused = try env.paywarden("token", "decrypt", tokenPath, "--reveal")  // Apple's root: the chain does not verify
        #expect(refused.status != 0)

        let records = try env.audit().filter { $0.action == "token-decrypt" }
        #expect(records.count == 3, "\(records)")
        guard records.count == 3 else { return }
        #expect(records[0].result == "ok" && records[0].keyID == keyID && records[0].merchantID == "merchant.com.audit")
        #expect(records[0].detail?.contains("revealed") == true, "\(records[0])")
        #expect(records[1].result == "ok" && records[1].detail?.contains("masked") == true && records[1].detail?.contains("at ") == true)
        #expect(records[2].result == "refused" && records[2].detail?.contains("certificate_chain_invalid") == true, "\(records[2])")
        // One transaction, one reference: the two lines can be matched, and neither names it.
        let reference = try #require(records[0].detail?.split(separator: " ").first { $0.hasPrefix("tx:") })
        #expect(records[1].detail?.contains(reference) == true)
        let text = try String(contentsOfFile: env.home + "/audit/audit.jsonl", encoding: .utf8)
        #expect(!text.contains(pan) && !text.lowercased().contains(transactionID.lowercased()))
    }
}
