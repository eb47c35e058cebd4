import Foundation
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// `paywarden dev-hsm init` makes a development token in either implementation and the development
/// PKI, prints the environment that opens it (trusting that PKI alone), and the token then works
/// for `hsm status` and the key commands.
@Suite(.serialized, .releasesTestResources)
struct DevelopmentTokenTests {
    @Test(arguments: ["softhsm", "nss"])
    func initMakesAWorkingTokenAndIsIdempotent(backend: String) throws {
        let home = NSTemporaryDirectory() + "paywarden-dev-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: home)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PAYWARDEN_") && $0.key != "SOFTHSM2_CONF" }
        environment["PAYWARDEN_HOME"] = home
        let cli = PaywardenProcess(environment: environment)
        let first = try cli.run(["dev-hsm", "init", "--backend", backend, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        let created = try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any]
        #expect(created?["created"] as? Bool == true)
        let exports = try #require(created?["environment"] as? [String: String])
        #expect((exports["PAYWARDEN_PKCS11_INIT_RESERVED"] != nil) == (backend == "nss"))
        #expect((exports["PAYWARDEN_HSM_ALLOW_SOFTWARE_OAEP"] != nil) == (backend == "softhsm"), "NSS has OAEP-SHA256 itself")
        // The development PKI is made with the token, and is the configuration's only trust.
        #expect(exports["PAYWARDEN_TRUST_ROOTS"] == "\(home)/\(backend)/sandbox/pki/root.pem", "\(exports)")
        #expect(exports["PAYWARDEN_CERTIFICATE_ISSUERS"] == "\(home)/\(backend)/sandbox/pki/merchant-ca.pem")

        let again = try cli.run(["dev-hsm", "init", "--backend", backend, "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect((try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])?["created"] as? Bool == false)

        let operator_ = PaywardenProcess(environment: environment.merging(exports) { $1 })
        let status = try operator_.run(["hsm", "status", "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(report["token"] as? String == "paywarden")
        #expect(report["ecdhPath"] as? String == "ecdh+sensitive-z+digest-key")
        #expect(report["p384ECDHPath"] as? String == "p384-ecdh+sensitive-z+digest-key")
        #expect(report["usageInformationSenderKey"] as? String == "in the HSM")
        #expect(
            report["rsaDecryptionPath"] as? String == (backend == "nss" ? "rsa-oaep-sha256-unwrap" : "rsa-x509+openssl-oaep-decode"))
        #expect(report["unknownAttributes"] as? [String] == (backend == "nss" ? ["CKA_COPYABLE"] : []))
        // Both development modules live in the process: auto dispatches their calls inline, and says why.
        let dispatch = try #require(report["dispatch"] as? [String: Any])
        #expect(dispatch["configured"] as? String == "auto" && dispatch["chosen"] as? String == "inline", "\(dispatch)")
        #expect((dispatch["roundTripMicroseconds"] as? Double ?? .infinity) < (dispatch["thresholdMicroseconds"] as? Double ?? 0))
        #expect((dispatch["summary"] as? String)?.hasPrefix("inline (auto: the module's fastest round trip of 15 took") == true)
        #expect((dispatch["sampleMicroseconds"] as? [Double])?.count == 15, "\(dispatch)")
        #expect(report["rsaSigningPath"] as? String == "sha256-rsa-pkcs")
        let text = try operator_.run(["hsm", "status"])
        #expect(text.stdout.contains("dispatch:   inline (auto:"), "\(text.stdout)")
        #expect(text.stdout.contains("round trips (µs, fastest first): "), "\(text.stdout)")
        let key = try operator_.run(["keys", "create", "--merchant-id", "merchant.com.example.dev", "--json"])
        #expect(key.status == 0, "\(key.stderr)")
        #expect(try operator_.run(["keys", "list"]).stdout.contains("merchant.com.example.dev"))
    }
}
