import Crypto
import Foundation
import PaywardenSandbox
import PaywardenTestTraits
import PaywardenTesting
import SwiftASN1
import Testing
import X509
import _CryptoExtras

/// tpm2-pkcs11 on a software TPM (Debian's libtpm2-pkcs11 1.9 on swtpm, through tpm2-abrmd),
/// driven as an operator would. The module has no ECDH, refuses session objects and private-key
/// import, and ties the public key's usages to the private key's: the probe works on token objects,
/// templates adapt (both reported by `hsm status`), RSA processing and identity keys are made and
/// sign their CSRs, RSA_v1 decrypts over HTTP, and EC processing keys and key imports are refused
/// at the command, with exit status 3 and what is missing named.
@Suite(.serialized, .releasesTestResources)
struct TPM2PKCS11Tests {
    @Test func rsaCustodyAndRSA_v1WorkOnATPMAndWhatItCannotDoIsRefusedAtTheCommand() async throws {
        try #require(SoftwareTPMToken.isInstalled, "tpm2-pkcs11, swtpm or tpm2-abrmd is not installed (`make test` installs them)")
        let tpm = try await SoftwareTPMToken.make()
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca, backend: .softHSM)
        let on = tpm.environment
        let merchant = "merchant.com.example.tpm"

        let status = try env.paywarden("hsm", "status", "--json", environment: on)
        #expect(status.status == 0, "\(status.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(report["ecdhPath"] == nil || report["ecdhPath"] is NSNull, "\(report)")
        #expect(report["rsaDecryptionPath"] as? String == "rsa-oaep-sha256-decrypt", "\(report)")
        #expect((report["cannotDecrypt"] as? [[String: Any]])?.map { $0["version"] as? String } == ["EC_v1"])
        let vaultGaps = (report["vaultGaps"] as? [[String: Any]] ?? []).compactMap { $0["operation"] as? String }
        #expect(vaultGaps.contains("AES key wrap or AES-GCM for data keys"), "\(vaultGaps)")
        // It lists CKM_AES_KEY_GEN and CKM_SHA256_HMAC but makes no secret key through PKCS#11: the gap says so.
        let vaultMissing = (report["vaultGaps"] as? [[String: Any]] ?? []).compactMap { $0["missing"] as? String }
        #expect(
            vaultMissing.count == 2 && vaultMissing.allSatisfy { $0.hasPrefix("it makes no AES or generic secret key through PKCS#11") },
            "\(vaultMissing)")
        let probe = report["probe"] as? [String] ?? []
        #expect(probe.contains { $0.hasPrefix("probe keys: the token refused session objects") }, "\(probe)")
        #expect((report["keyTemplates"] as? String)?.hasPrefix("public-key usages left to the module") == true, "\(report)")
        #expect((report["dispatch"] as? [String: Any])?["chosen"] as? String == "pool")
        #expect(report["keys"] as? [Any] == nil || (report["keys"] as? [Any])?.isEmpty == true, "the probe's token objects are gone")

        let ec = try env.paywarden("keys", "create", "--merchant-id", merchant, "--type", "ec", environment: on)
        #expect(ec.status == 3 && ec.stderr.contains("refused: this HSM cannot use an EC processing key"), "\(ec.stderr)")
        let software = try env.write(Array(try _RSA.Encryption.PrivateKey(keySize: .bits2048).pemRepresentation.utf8), named: "rsa.pem")
        let imported = try env.paywarden("keys", "import", "--key", software, "--merchant-id", merchant, environment: on)
        #expect(imported.status == 3 && imported.stderr.contains("it cannot import keys"), "\(imported.stderr)")
        #expect(try env.listedKeys().isEmpty)
        #expect(try env.paywarden("keys", "list", environment: on).stdout.contains("no merchant keys"), "nor any key in the token")

        // An identity key: sign-only, which the module takes once the public key's usages are left to it.
        let csrPath = env.home + "/identity.csr"
        let identity = try env.paywarden(
            "keys", "create", "--merchant-id", merchant, "--purpose", "identity", "--csr-out", csrPath, environment: on)
        #expect(identity.status == 0, "\(identity.stderr)")
        let csr = try CertificateSigningRequest(pemEncoded: try String(contentsOfFile: csrPath, encoding: .utf8))
        #expect(csr.publicKey.isValidSignature(csr.signature, for: csr), "the TPM's signature over the CSR verifies")

        let rsa = try env.certifiedProcessingKey(merchant, type: "rsa", by: ca, environment: on).subjectPublicKeyInfo
        let pan = "4111111111111111"
        let merchantKey = try _RSA.Encryption.PublicKey(derRepresentation: rsa)
        let rsaToken = { (options: TokenForge.Options) in
            try TokenForge(pki: DecryptionTestEnvironment.sharedPKI)
                .rsaV1(payload: PaymentPayloads.emv(pan: pan), merchant: merchantKey, options: options)
                .withPublicKeyHash(Data(SHA256.hash(data: rsa)).base64EncodedString())
        }
        let serve = try await env.serve(on)
        let ready = try await serve.send(.GET, "/readyz")
        #expect(ready.status == 200 && ready.text.contains(#""cannotDecrypt":["EC_v1"]"#), "\(ready.text)")
        #expect(ready.text.contains(#""cannotRun":["vault"]"#), "\(ready.text)")
        let decrypted = try await serve.decrypt(try rsaToken(.init()))
        #expect(decrypted.status == 200 && decrypted.text.contains(pan), "\(decrypted.text) \(serve.log)")
        // A wrapped key that is no OAEP encryption: the module answers CKR_GENERAL_ERROR and (against
        // the standard) keeps the decryption active; the token is at fault, not the HSM, and the
        // session serves the next token.
        let refused = try await serve.decrypt(try rsaToken(.badWrappedKey))
        #expect(refused.errorCode == "decryption_failed", "\(refused.status) \(refused.text)")
        #expect(try await serve.send(.GET, "/readyz").status == 200)
        #expect(try await serve.decrypt(try rsaToken(.init())).status == 200)
        serve.stop()
    }
}
