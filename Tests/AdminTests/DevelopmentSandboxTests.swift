import Foundation
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// `paywarden dev-hsm sandbox` makes a development PKI and a merchant it certified, once; its
/// sample tokens verify only where that PKI is the configured trust, and `sample-token` refuses
/// to forge one anywhere else.
@Suite(.serialized, .releasesTestResources)
struct DevelopmentSandboxTests {
    static let merchantID = "merchant.com.example.sandbox"

    @Test(arguments: ["softhsm", "nss"])
    func theSandboxIsMadeOnceAndItsTokensVerifyOnlyUnderItsOwnTrust(backend: String) throws {
        let home = NSTemporaryDirectory() + "paywarden-sandbox-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: home)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PAYWARDEN_") && $0.key != "SOFTHSM2_CONF" }
        environment["PAYWARDEN_HOME"] = home
        let initialised = try PaywardenProcess(environment: environment).run(["dev-hsm", "init", "--backend", backend])
        #expect(initialised.status == 0, "\(initialised.stderr)")
        let directory = "\(home)/\(backend)"
        let cli = PaywardenProcess(environment: try Self.environment(directory + "/env", base: environment))

        let first = try cli.run(["dev-hsm", "sandbox", "--backend", backend, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
        #expect((report["keys"] as? [String])?.count == 3, "\(report)")
        let created = report["created"] as? [String] ?? []
        #expect(created.contains("paypage sandboxPaypage") && created.contains("API key sandbox-server"), "\(created)")
        let again = try cli.run(["dev-hsm", "sandbox", "--backend", backend, "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        let second = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
        #expect(second?["created"] as? [String] == [], "a second run changes nothing")
        #expect(second?["keys"] as? [String] == report["keys"] as? [String])

        // The environment now trusts the development PKI and nothing else; its secrets are the owner's only.
        let sandbox = try Self.environment(directory + "/env", base: environment)
        let pki = directory + "/sandbox/pki"
        #expect(
            sandbox["PAYWARDEN_TRUST_ROOTS"] == pki + "/root.pem" && sandbox["PAYWARDEN_CERTIFICATE_ISSUERS"] == pki + "/merchant-ca.pem")
        #expect(
            sandbox["PAYWARDEN_API_KEYS"]?.contains("sandbox-server:") == true && sandbox["PAYWARDEN_API_KEYS"]?.contains("dev:") == true)
        for file in ["private", "private/ec-leaf.key", "private/merchant-ca.key", "private/server.key"] {
            let mode = try FileManager.default.attributesOfItem(atPath: "\(pki)/\(file)")[.posixPermissions] as? Int
            #expect(mode == (file == "private" ? 0o700 : 0o600), "\(file): \(String(mode ?? 0, radix: 8))")
        }
        let keyMode = try FileManager.default.attributesOfItem(atPath: directory + "/sandbox/merchant-api-key")[.posixPermissions] as? Int
        #expect(keyMode == 0o600)

        let operator_ = PaywardenProcess(environment: sandbox)
        for flags in [[], ["--rsa"], ["--merchant-token", "DNITHE302409093402145671"]] {
            let token = try operator_.run(
                ["dev-hsm", "sample-token", "--merchant-id", Self.merchantID, "--pan", "4111111111111111"] + flags)
            #expect(token.status == 0, "\(flags): \(token.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(token.stdout.utf8)) as? [String: Any])
            let version = (object["paymentData"] as? [String: Any])?["version"] as? String
            #expect(version == (flags == ["--rsa"] ? "RSA_v1" : "EC_v1") && object["transactionIdentifier"] is String)
            // Every check passes under the sandbox's trust, and the chain is refused under Apple's.
            let inspected = try operator_.run(["token", "inspect", "-"], input: Data(token.stdout.utf8))
            #expect(inspected.status == 0 && inspected.stdout.contains("verdict:          OK"), "\(inspected.stdout)\(inspected.stderr)")
            let underApple = PaywardenProcess(environment: sandbox.filter { $0.key != "PAYWARDEN_TRUST_ROOTS" })
            let refused = try underApple.run(["token", "inspect", "-", "--json"], input: Data(token.stdout.utf8))
            #expect(refused.status != 0 && refused.stdout.contains("certificate_chain_invalid"), "\(refused.stdout)")
        }

        // No forging where the development PKI is not the only configured trust, nor for a merchant without a key.
        for roots in [nil, pki + "/server-ca.pem", pki + "/root.pem," + pki + "/server-ca.pem"] {
            var elsewhere = sandbox
            elsewhere["PAYWARDEN_TRUST_ROOTS"] = roots
            let refused = try PaywardenProcess(environment: elsewhere).run(["dev-hsm", "sample-token", "--merchant-id", Self.merchantID])
            #expect(refused.status == 1 && refused.stdout.isEmpty, "\(refused.stdout)")
            #expect(refused.stderr.contains("PAYWARDEN_TRUST_ROOTS does not name a development PKI's root alone"), "\(refused.stderr)")
        }
        // A PKI made again (deleted here; or renewed near its expiry) retires the keys the old one certified.
        try FileManager.default.removeItem(atPath: pki)
        let renewed = try cli.run(["dev-hsm", "sandbox", "--backend", backend, "--json"])
        #expect(renewed.status == 0, "\(renewed.stderr)")
        let third = try JSONSerialization.jsonObject(with: Data(renewed.stdout.utf8)) as? [String: Any]
        let changes = third?["created"] as? [String] ?? []
        #expect(changes.filter { $0.hasPrefix("retired ") }.count == 3, "\(changes)")
        let newKeys = Set(third?["keys"] as? [String] ?? [])
        #expect(newKeys.count == 3 && newKeys.isDisjoint(with: Set(report["keys"] as? [String] ?? [])), "new keys, newly certified")
        let renewedToken = try operator_.run(["dev-hsm", "sample-token", "--merchant-id", Self.merchantID])
        let verified = try operator_.run(["token", "inspect", "-"], input: Data(renewedToken.stdout.utf8))
        #expect(verified.status == 0, "a token of the new PKI verifies: \(verified.stdout)\(verified.stderr)")

        let unknown = try operator_.run(["dev-hsm", "sample-token", "--merchant-id", "merchant.com.example.other"])
        #expect(unknown.status == 1 && unknown.stderr.contains("has no active EC processing key"), "\(unknown.stderr)")
        let badNumber = try operator_.run(["dev-hsm", "sample-token", "--merchant-id", Self.merchantID, "--pan", "4111-1111"])
        #expect(badNumber.status == 64 && badNumber.stderr.contains("--pan takes 12 to 19 digits"), "\(badNumber.stderr)")
    }

    /// The sandbox writes active keys certified by the development PKI, their records and a paypage:
    /// with an operator's settings (their own HSM, their trust) it refuses and writes nothing, even
    /// where a development token exists in the same home under the same label; and on the
    /// development token it refuses a configuration that trusts anything but the development PKI.
    @Test(arguments: HSMTestBackend.allCases)
    func theSandboxWritesOnlyIntoTheDevelopmentTokenUnderTheDevelopmentTrust(backend: HSMTestBackend) async throws {
        let operatorEnvironment = try await AdminTestEnvironment.make(backend: backend)
        let initialised = try operatorEnvironment.paywarden("dev-hsm", "init", "--backend", backend.rawValue)
        #expect(initialised.status == 0, "\(initialised.stderr)")

        let refused = try operatorEnvironment.paywarden("dev-hsm", "sandbox", "--backend", backend.rawValue)
        #expect(refused.status == 3, "the sandbox wrote into the operator's HSM: \(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("development token"), "\(refused.stderr)")
        #expect(try operatorEnvironment.listedKeys().isEmpty, "keys were made in the operator's HSM")

        // The development token itself, but trusting Apple's root beside (or instead of) the development PKI.
        let directory = "\(operatorEnvironment.home)/\(backend.rawValue)"
        let base = operatorEnvironment.cli.environment.filter { !$0.key.hasPrefix("PAYWARDEN_") && $0.key != "SOFTHSM2_CONF" }
        let development = try Self.environment(directory + "/env", base: base)
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let apple = repository.appendingPathComponent("Keys/trust/AppleRootCA-G3.pem").path
        for roots in [apple, (development["PAYWARDEN_TRUST_ROOTS"].map { $0 + "," } ?? "") + apple] {
            var trusting = development
            trusting["PAYWARDEN_TRUST_ROOTS"] = roots
            let refusedTrust = try PaywardenProcess(environment: trusting).run(["dev-hsm", "sandbox", "--backend", backend.rawValue])
            #expect(refusedTrust.status == 3, "\(roots): \(refusedTrust.stdout)\(refusedTrust.stderr)")
            #expect(refusedTrust.stderr.contains("PAYWARDEN_TRUST_ROOTS"), "\(refusedTrust.stderr)")
        }
        // The development token under its own environment: made.
        let made = try PaywardenProcess(environment: development).run(["dev-hsm", "sandbox", "--backend", backend.rawValue])
        #expect(made.status == 0, "\(made.stderr)")
    }

    /// `base` with the exports of an env file `paywarden dev-hsm init` wrote.
    static func environment(_ file: String, base: [String: String]) throws -> [String: String] {
        var environment = base
        for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n") where line.hasPrefix("export ") {
            let assignment = line.dropFirst("export ".count)
            guard let equals = assignment.firstIndex(of: "=") else { continue }
            var value = String(assignment[assignment.index(after: equals)...])
            if value.hasPrefix("'") && value.hasSuffix("'") {
                value = String(value.dropFirst().dropLast()).replacingOccurrences(of: "'\\''", with: "'")
            }
            environment[String(assignment[..<equals])] = value
        }
        return environment
    }
}
