import Crypto
import Foundation
import PaywardenSandbox
import PaywardenTestTraits
import PaywardenTesting
import Testing
import _CryptoExtras

/// SoftHSM behind p11-kit's remoting (Debian's p11-kit 0.24: `p11-kit server` on a unix socket,
/// Paywarden on `p11-kit-client.so`), driven as an operator would, through the CLI and a served
/// `paywarden serve`. The client carries no ECDH parameters, so what the module can do works (RSA
/// key custody, RSA_v1 over HTTP) and EC_v1 is refused at the first command that would need it,
/// with a permanent answer: `keys create` exit 3, `token decrypt` exit 3, HTTP 501
/// `hsm_capability_missing` without Retry-After while `/readyz` stays ready; so is the vault, which
/// needs AES key wrap or AES-GCM (`paypages create` exit 3, `/readyz` naming it).
@Suite(.serialized, .releasesTestResources)
struct P11KitRemotingTests {
    @Test func rsaKeysAndRSA_v1WorkThroughTheSocketAndEC_v1IsRefusedForGood() async throws {
        try #require(P11KitRemotedToken.isInstalled, "p11-kit and p11-kit-modules are not installed (`make test` installs them)")
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca, backend: .softHSM)
        let remoted = try await P11KitRemotedToken.start(env.token)
        let through = remoted.environment
        let merchant = "merchant.com.example.remoted"

        let status = try env.paywarden("hsm", "status", "--json", environment: through)
        #expect(status.status == 0, "\(status.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(report["module"] as? String == P11KitRemotedToken.clientModulePath)
        #expect(report["ecdhPath"] == nil || report["ecdhPath"] is NSNull, "\(report)")
        #expect(report["rsaDecryptionPath"] as? String == "rsa-x509+openssl-oaep-decode")
        #expect(report["rsaSigningPath"] as? String == "sha256-rsa-pkcs")
        let gaps = report["cannotDecrypt"] as? [[String: Any]] ?? []
        #expect(gaps.map { $0["version"] as? String } == ["EC_v1"], "\(gaps)")
        // Nor AES key wrap or AES-GCM: no vault, said at the first vault command, with nothing made.
        let vaultGaps = report["vaultGaps"] as? [[String: Any]] ?? []
        #expect(vaultGaps.map { $0["operation"] as? String } == ["AES key wrap or AES-GCM for data keys"], "\(vaultGaps)")
        let paypage = try env.paywarden(
            "paypages", "create", "--paypage-id", "remotedPaypage", "--organization", "remoted", "--merchant-id", merchant,
            environment: through)
        #expect(paypage.status == 3 && paypage.stderr.contains("the vault cannot run on this HSM"), "\(paypage.stderr)")
        #expect(paypage.stderr.contains("CKM_AES_KEY_WRAP_PAD") && paypage.stderr.contains("p11-kit"))
        // Every call crosses the socket: the pool, on every start.
        let dispatch = try #require(report["dispatch"] as? [String: Any])
        #expect(dispatch["chosen"] as? String == "pool", "\(dispatch)")
        for _ in 0..<3 {
            let again = try env.paywarden("hsm", "status", "--json", environment: through)
            let object = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
            #expect((object?["dispatch"] as? [String: Any])?["chosen"] as? String == "pool", "\(again.stdout)")
        }

        // EC processing: refused at the first command, nothing made.
        let ecRefused = try env.paywarden("keys", "create", "--merchant-id", merchant, "--type", "ec", environment: through)
        #expect(ecRefused.status == 3, "\(ecRefused.stderr)")
        #expect(ecRefused.stderr.contains("refused: this HSM cannot use an EC processing key"), "\(ecRefused.stderr)")
        #expect(ecRefused.stderr.contains("CKM_ECDH1_DERIVE") && ecRefused.stderr.contains("no retry helps"))
        #expect(try env.listedKeys().isEmpty)
        #expect(try env.paywarden("keys", "list", environment: through).stdout.contains("no merchant keys"), "nor any key in the token")

        // RSA custody through the socket: a key made in the HSM, its CSR signed there, certified.
        let rsa = try env.certifiedProcessingKey(merchant, type: "rsa", by: ca, environment: through).subjectPublicKeyInfo
        // An EC key prepared for an HSM upgrade, with a warning.
        let prepared = try env.certifiedProcessingKey(merchant, type: "ec", by: ca, environment: through, options: ["--allow-unusable"])
        #expect(prepared.creationStderr.contains("warning: this HSM cannot use an EC processing key yet"), "\(prepared.creationStderr)")
        let ec = prepared.subjectPublicKeyInfo
        #expect(try env.listedKeys().map(\.state) == ["active", "active"])

        let forge = TokenForge(pki: DecryptionTestEnvironment.sharedPKI)
        let pan = "4111111111111111"
        let rsaToken = try forge.rsaV1(payload: PaymentPayloads.emv(pan: pan), merchant: _RSA.Encryption.PublicKey(derRepresentation: rsa))
            .withPublicKeyHash(Data(SHA256.hash(data: rsa)).base64EncodedString())
        let ecToken = try forge.ecV1(
            payload: PaymentPayloads.threeDSecure(), merchant: P256.KeyAgreement.PublicKey(derRepresentation: ec),
            merchantIdentifierHash: TokenForge.merchantIdentifierHash(merchant)
        ).withPublicKeyHash(Data(SHA256.hash(data: ec)).base64EncodedString())

        let roots = ["PAYWARDEN_TRUST_ROOTS": try DecryptionTestEnvironment.sharedPKI.writeRoot(to: env.home)]
        let ecPath = try env.write(ecToken, named: "ec-token.json")
        let cliRefused = try env.paywarden("token", "decrypt", ecPath, environment: through.merging(roots) { $1 })
        #expect(cliRefused.status == 3, "\(cliRefused.stderr)")
        #expect(
            cliRefused.stderr.contains("hsm_capability_missing") && cliRefused.stderr.contains("no retry helps"), "\(cliRefused.stderr)")

        let serve = try await env.serve(through)
        let ready = try await serve.send(.GET, "/readyz")
        #expect(ready.status == 200 && ready.text.contains(#""cannotDecrypt":["EC_v1"]"#), "\(ready.text)")
        #expect(ready.text.contains(#""cannotRun":["vault"]"#), "\(ready.text)")
        let decrypted = try await serve.decrypt(rsaToken)
        #expect(decrypted.status == 200, "\(decrypted.text)")
        #expect(decrypted.text.contains(pan))
        let badToken = try forge.rsaV1(
            payload: PaymentPayloads.emv(), merchant: _RSA.Encryption.PublicKey(derRepresentation: rsa), options: .badWrappedKey
        ).withPublicKeyHash(Data(SHA256.hash(data: rsa)).base64EncodedString())
        #expect(try await serve.decrypt(badToken).errorCode == "decryption_failed")
        let refused = try await serve.decrypt(ecToken)
        #expect(refused.status == 501 && refused.errorCode == "hsm_capability_missing", "\(refused.text)")
        #expect(refused.header("Retry-After") == nil)
        #expect(refused.text.contains("CKM_ECDH1_DERIVE") && refused.text.contains("no retry helps"), "\(refused.text)")
        #expect(try await serve.send(.GET, "/readyz").status == 200, "a capability gap is not an outage")
        #expect(serve.log.contains("this HSM cannot decrypt EC_v1 tokens"))
        serve.stop()

        // Rotation makes a key of the current one's type: refused here for an EC key, as creation is.
        let rotating = "merchant.com.example.rotate"
        _ = try env.certifiedProcessingKey(rotating, type: "ec", by: ca, environment: through, options: ["--allow-unusable"])
        let rotation = try env.paywarden("keys", "rotate", "--merchant-id", rotating, environment: through)
        #expect(rotation.status == 3 && rotation.stderr.contains("refused: this HSM cannot use an EC processing key"), "\(rotation.stderr)")
        let prepared2 = try env.paywarden("keys", "rotate", "--merchant-id", rotating, "--allow-unusable", environment: through)
        #expect(prepared2.status == 0 && prepared2.stderr.contains("warning: this HSM cannot use an EC processing key yet"))
    }
}
