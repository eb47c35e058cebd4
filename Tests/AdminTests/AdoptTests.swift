import Crypto
import Foundation
import KeyCustody
import PKCS11
import PaywardenSandbox
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// Keys the HSM has and the database does not know: made with one database, then the database
/// changed. `keys list` shows them, a token encrypted to one says so, `keys adopt` records one as
/// pending and its certificate then activates it; keys that could leave the HSM, or do not suit
/// the purpose, are refused.
@Suite(.serialized, .releasesTestResources)
struct AdoptTests {
    @Test("made on one SQLite database, listed as unknown on a fresh one, adopted, certified: a token decrypts")
    func keysMadeWithAnotherDatabase() async throws {
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca)
        let merchant = "merchant.com.example.adopted"
        let created = try env.paywarden("keys", "create", "--merchant-id", merchant, "--csr-out", env.home + "/key.csr", "--json")
        #expect(created.status == 0, "\(created.stderr)")
        let key = try AdminTestEnvironment.key(in: created)

        // Another database: the key is in the HSM, its record is not.
        let fresh = ["PAYWARDEN_DATABASE_URL": "sqlite:" + env.home + "/fresh/paywarden.sqlite"]
        let listed = try env.paywarden("keys", "list", environment: fresh)
        #expect(listed.status == 0, "\(listed.stderr)")
        let line = try #require(listed.stdout.split(separator: "\n").first { $0.hasPrefix(key.id) }, "\(listed.stdout)")
        #expect(line.contains("in the HSM, no record in this database") && line.contains(" ec "), "\(line)")
        #expect(line.contains("publicKeyHash=\(key.publicKeyHash)"), "\(line)")
        #expect(listed.stdout.contains("paywarden keys adopt"))

        let csr = try String(contentsOfFile: env.home + "/key.csr", encoding: .utf8)
        let certificate = try env.write(try ca.issue(csrPEM: csr, merchantID: merchant, purpose: .processing), named: "key.cer")
        let unknown = try env.paywarden("keys", "import-certificate", certificate, environment: fresh)
        #expect(unknown.status == 1)
        #expect(
            unknown.stderr.contains("paywarden keys adopt \(key.id) --merchant-id \(merchant) --purpose processing"), "\(unknown.stderr)")

        // A token to the key: decryption says the key is in the HSM without a record (not "no key in
        // the HSM") and where the operator finds it; an API caller reads the same words, so no key id.
        let tokenPath = try env.write(try await token(to: key, merchant: merchant, env), named: "token.json")
        let roots = try ["PAYWARDEN_TRUST_ROOTS": DecryptionTestEnvironment.sharedPKI.writeRoot(to: env.home)]
        let undecryptable = try env.paywarden("token", "decrypt", tokenPath, environment: fresh.merging(roots) { $1 })
        #expect(undecryptable.status == 1)
        #expect(undecryptable.stderr.contains("unknown_public_key_hash"), "\(undecryptable.stderr)")
        #expect(
            undecryptable.stderr.contains("a key in the HSM") && undecryptable.stderr.contains("no record of it")
                && undecryptable.stderr.contains("keys list") && !undecryptable.stderr.contains("\(key.id)"), "\(undecryptable.stderr)")

        // The purpose must suit the key: an EC key is no identity key.
        let wrongType = try env.paywarden("keys", "adopt", key.id, "--merchant-id", merchant, "--purpose", "identity", environment: fresh)
        #expect(wrongType.status == 1 && wrongType.stderr.contains("RSA-2048 for identity keys"), "\(wrongType.stderr)")

        let adopted = try env.paywarden(
            "keys", "adopt", String(key.id.prefix(8)), "--merchant-id", merchant, "--purpose", "processing", "--json", environment: fresh)
        #expect(adopted.status == 0, "\(adopted.stderr)")
        let pending = try AdminTestEnvironment.key(in: adopted)
        #expect(pending.id == key.id && pending.state == "pending" && pending.publicKeyHash == key.publicKeyHash)
        let again = try env.paywarden("keys", "adopt", key.id, "--merchant-id", merchant, "--purpose", "processing", environment: fresh)
        #expect(again.status == 1 && again.stderr.contains("already has a record"), "\(again.stderr)")

        let imported = try env.paywarden("keys", "import-certificate", certificate, "--json", environment: fresh)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try AdminTestEnvironment.key(in: imported).state == "active")
        let decrypted = try env.paywarden("token", "decrypt", tokenPath, "--json", environment: fresh.merging(roots) { $1 })
        #expect(decrypted.status == 0, "\(decrypted.stderr)")

        let audit = try env.audit().filter { $0.action == "keys.adopt" }
        #expect(audit.map(\.result) == ["refused", "ok", "refused"], "\(audit)")
        #expect(audit.allSatisfy { $0.keyID?.hasPrefix(String(key.id.prefix(8))) == true && $0.merchantID == merchant }, "\(audit)")
    }

    @Test("a key that could leave the HSM is refused adoption")
    func refusesAnExtractableKey() async throws {
        let env = try await AdminTestEnvironment.make()
        let hsm = try await env.token.open()
        let id = KeyIdentifier(bytes: Array((0..<16).map { _ in UInt8.random(in: 0...255) }))
        do {
            try await hsm.withSession { session throws(PKCS11Error) in
                _ = try session.generateKeyPair(
                    .ecKeyPairGeneration,
                    publicKey: [
                        .objectClass(.publicKey), .keyType(.ec), .id(id), .label("extractable"), .bool(.token, true),
                        Attribute(.ecParams, bytes: [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]),
                    ],
                    privateKey: [
                        .objectClass(.privateKey), .keyType(.ec), .id(id), .label("extractable"), .bool(.token, true),
                        .bool(.private, true), .bool(.sensitive, false), .bool(.extractable, true), .bool(.derive, true),
                    ])
            }
            await hsm.close()
        } catch {
            await hsm.close()
            throw error
        }
        let listed = try env.paywarden("keys", "list")
        #expect(listed.stdout.contains("\(id.hex)  in the HSM, no record in this database"), "\(listed.stdout)")
        let refused = try env.paywarden("keys", "adopt", id.hex, "--merchant-id", "merchant.com.example", "--purpose", "processing")
        #expect(refused.status == 1)
        // NSS softokn makes every token private key sensitive; SoftHSM keeps CKA_SENSITIVE=FALSE as asked.
        #expect(refused.stderr.contains("can leave the HSM") && refused.stderr.contains("CKA_EXTRACTABLE=TRUE)"), "\(refused.stderr)")
        #expect(try env.listedKeys().isEmpty)
    }

    /// An EC_v1 token from the test PKI to `key`, whose public point the HSM gives.
    private func token(to key: AdminTestEnvironment.ListedKey, merchant: String, _ env: AdminTestEnvironment) async throws -> [UInt8] {
        let hsm = try await env.token.open()
        let listing = try await hsm.withSession { session throws(PKCS11Error) in try session.privateKeys() }
        await hsm.close()
        let object = try #require(listing.keys.first { $0.id.hex == key.id })
        guard case .ecP256(let point) = object.publicKey else { throw CocoaError(.featureUnsupported) }
        return try TokenForge(pki: DecryptionTestEnvironment.sharedPKI).ecV1(
            payload: PaymentPayloads.threeDSecure(), merchant: .init(x963Representation: point),
            merchantIdentifierHash: TokenForge.merchantIdentifierHash(merchant)
        )
        .withPublicKeyHash(key.publicKeyHash)
    }
}
