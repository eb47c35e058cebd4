import Crypto
import Foundation
import KeyCustody
import PKCS11
import PaywardenStorageSQLite
import PaywardenTestTraits
import PaywardenTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.serialized, .releasesTestResources)
struct ImportTests {
    /// A new P-256 key and its processing certificate from `ca`, exported by openssl as a PKCS#12
    /// under the password in `passwordFile` (`legacy`: RC2/3DES, as older keychains write).
    static func exportPKCS12(
        _ env: AdminTestEnvironment, _ ca: TestCertificateAuthority, merchantID: String, passwordFile: String, legacy: Bool
    ) throws -> String {
        let software = P256.Signing.PrivateKey()
        let certificate = try ca.issue(publicKey: .init(software.publicKey), merchantID: merchantID, purpose: .processing)
        let keyPath = try env.write(Array(software.pemRepresentation.utf8), named: "key.pem")
        let certificatePath = try env.write(Array(certificate.pem("CERTIFICATE").utf8), named: "cert.pem")
        let p12Path = env.home + "/bundle.p12"
        let exported = try run(
            "/usr/bin/openssl",
            ["pkcs12", "-export"] + (legacy ? ["-legacy"] : [])
                + ["-inkey", keyPath, "-in", certificatePath, "-passout", "file:" + passwordFile, "-out", p12Path])
        #expect(exported.status == 0, "\(exported.output)")
        return p12Path
    }

    /// Each key format in the real vectors goes into the HSM through `paywarden keys import`.
    @Test(arguments: [
        ("gala-2014", "SEC1"), ("basistheory-ec-new", "EC PARAMETERS + SEC1"), ("basistheory-rsa", "PKCS#8 RSA"),
    ])
    func vectorKeysImportWithTheirCertificates(vector: String, format: String) async throws {
        try #require(ConformanceVectors.available, "vectors absent")
        let env = try await AdminTestEnvironment.make()
        let directory = ConformanceVectors.directory + "/" + vector
        // The vectors' certificates expired years ago: refused unless explicitly allowed.
        let refused = try env.paywarden(
            "keys", "import", "--key", directory + "/merchant_key.pem", "--certificate", directory + "/merchant_cert.pem")
        #expect(refused.status == 1, "\(format)")
        #expect(refused.stderr.contains("the certificate expired on"), "\(refused.stderr)")
        #expect(try env.listedKeys().isEmpty)

        let output = try env.paywarden(
            "keys", "import", "--key", directory + "/merchant_key.pem",
            "--certificate", directory + "/merchant_cert.pem", "--allow-expired-certificate", "--json")
        #expect(output.status == 0, "\(format): \(output.stderr)")
        #expect(output.stderr.contains("still holds the private key in software"))
        let key = try AdminTestEnvironment.key(in: output)
        #expect(key.state == "active")
        #expect(key.type == (vector.hasSuffix("rsa") ? "rsa" : "ec"))
        // publicKeyHash is that of the certificate Apple issued, as tokens carry it.
        let token = try ConformanceVectors.json(vector, "token.json")
        #expect(key.publicKeyHash == (token["header"] as? [String: Any])?["publicKeyHash"] as? String)
        let intermediates = try ConformanceVectors.json(vector, "intermediates.json")
        #expect(key.merchantId == intermediates["merchantIdentifier"] as? String)

        // In the HSM the imported key is sensitive and never extractable.
        let hsm = try await env.token.open()
        let object = try await hsm.key(KeyIdentifier(hex: key.id)!)
        #expect(object.isSensitive && !object.isExtractable)
        #expect(object.usage.contains(vector.hasSuffix("rsa") ? .decrypt : .derive))
        await hsm.close()

        // The same key twice is refused.
        let twice = try env.paywarden(
            "keys", "import", "--key", directory + "/merchant_key.pem", "--certificate",
            directory + "/merchant_cert.pem", "--allow-expired-certificate")
        #expect(twice.status == 1)
        #expect(twice.stderr.contains("already in the HSM"))
    }

    @Test func vectorKeyWithOnlyAMerchantID() async throws {
        try #require(ConformanceVectors.available, "vectors absent")
        let env = try await AdminTestEnvironment.make()
        let directory = ConformanceVectors.directory + "/payu-sandbox-2018"
        let merchant = try String(contentsOfFile: directory + "/merchant_id.txt", encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let noMerchant = try env.paywarden("keys", "import", "--key", directory + "/merchant_key.pem")
        #expect(noMerchant.status == 1)
        #expect(noMerchant.stderr.contains("give --certificate or --merchant-id"))
        let output = try env.paywarden("keys", "import", "--key", directory + "/merchant_key.pem", "--merchant-id", merchant, "--json")
        #expect(output.status == 0, "\(output.stderr)")
        let key = try AdminTestEnvironment.key(in: output)
        #expect(key.merchantId == merchant)
        #expect(key.state == "active")
    }

    @Test func pkcs12WithItsCertificate() async throws {
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca)
        let passwordPath = try env.write(Array("p12-secret\n".utf8), named: "password")
        let p12Path = try Self.exportPKCS12(env, ca, merchantID: "merchant.p12", passwordFile: passwordPath, legacy: true)
        let wrongPassword = try env.write(Array("nope".utf8), named: "wrong")
        let refused = try env.paywarden("keys", "import", "--pkcs12", p12Path, "--password-file", wrongPassword)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("could not be opened with the given password"))
        let output = try env.paywarden("keys", "import", "--pkcs12", p12Path, "--password-file", passwordPath, "--json")
        #expect(output.status == 0, "\(output.stderr)")
        let key = try AdminTestEnvironment.key(in: output)
        #expect(key.merchantId == "merchant.p12")
        #expect(key.state == "active")
        #expect(!(try String(contentsOfFile: env.home + "/audit/audit.jsonl", encoding: .utf8)).contains("p12-secret"))
    }

    /// Secret files the CLI reads are held to the service's rule: a PKCS#12 password file or a
    /// PIN file that group or others can read is refused, naming the option and the fix, and the
    /// command exits as for any misconfiguration (3).
    @Test func secretFilesOthersCanReadAreRefusedByTheCLI() async throws {
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca)
        let passwordPath = try env.write(Array("p12-secret\n".utf8), named: "password")
        let p12Path = try Self.exportPKCS12(env, ca, merchantID: "merchant.exposed", passwordFile: passwordPath, legacy: false)
        #expect(chmod(passwordPath, 0o644) == 0)
        let refused = try env.paywarden("keys", "import", "--pkcs12", p12Path, "--password-file", passwordPath)
        #expect(refused.status == 3, "\(refused.stderr)")
        #expect(refused.stderr.contains("--password-file") && refused.stderr.contains("chmod 600 \(passwordPath)"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("p12-secret"))

        let exposedPIN = env.home + "/exposed.pin"
        try FileManager.default.copyItem(atPath: env.token.pinFile, toPath: exposedPIN)
        #expect(chmod(exposedPIN, 0o644) == 0)
        let status = try env.paywarden("hsm", "status", "--pin-file", exposedPIN)
        #expect(status.status == 3, "\(status.stderr)")
        #expect(status.stderr.contains("--pin-file") && status.stderr.contains("chmod 600 \(exposedPIN)"), "\(status.stderr)")

        #expect(chmod(passwordPath, 0o600) == 0)
        let imported = try env.paywarden("keys", "import", "--pkcs12", p12Path, "--password-file", passwordPath, "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
    }

    /// A password file written on Windows ends in CRLF: both characters are the editor's, so the
    /// PKCS#12 opens with the password before them.
    @Test func pkcs12PasswordFileWithCRLFLineEnding() async throws {
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca)
        let exportPassword = try env.write(Array("crlf-secret\n".utf8), named: "export-password")
        let p12Path = try Self.exportPKCS12(env, ca, merchantID: "merchant.crlf", passwordFile: exportPassword, legacy: false)
        let windowsPassword = try env.write(Array("crlf-secret\r\n".utf8), named: "password-crlf")
        let output = try env.paywarden("keys", "import", "--pkcs12", p12Path, "--password-file", windowsPassword, "--json")
        #expect(output.status == 0, "\(output.stderr)")
        #expect(try AdminTestEnvironment.key(in: output).merchantId == "merchant.crlf")
    }

    /// Two processes changing the same token at once: each action either happens whole or is
    /// refused, and the records stay intact.
    @Test func concurrentProcessesDoNotCorruptState() async throws {
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca)
        let created = try env.paywarden("keys", "create", "--merchant-id", "merchant.race", "--csr-out", env.home + "/race.csr", "--json")
        let key = try AdminTestEnvironment.key(in: created)
        let csr = try String(contentsOfFile: env.home + "/race.csr", encoding: .utf8)
        let certificatePath = try env.write(try ca.issue(csrPEM: csr, merchantID: "merchant.race", purpose: .processing), named: "race.cer")
        let keyFiles = try (0..<4).map { index in
            try env.write(Array(P256.Signing.PrivateKey().pemRepresentation.utf8), named: "import-\(index).pem")
        }
        let cli = env.cli
        let outputs = try await withThrowingTaskGroup(of: PaywardenProcess.Output.self) { group in
            for _ in 0..<2 {
                group.addTask { try cli.run(["keys", "import-certificate", certificatePath]) }
            }
            for (index, file) in keyFiles.enumerated() {
                group.addTask { try cli.run(["keys", "import", "--key", file, "--merchant-id", "merchant.bulk\(index)"]) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outputs.allSatisfy { $0.status == 0 }, "\(outputs.map(\.stderr))")
        #expect(outputs.filter { $0.stderr.contains("already imported") }.count == 1)
        let keys = try env.listedKeys()
        #expect(keys.count == 5)
        #expect(keys.allSatisfy { $0.state == "active" })
        #expect(
            Set(keys.compactMap(\.merchantId)) == ["merchant.race", "merchant.bulk0", "merchant.bulk1", "merchant.bulk2", "merchant.bulk3"])
        // Exactly one record per key in the database, this key's with its certificate, and nothing
        // of Paywarden's in the token but the keys.
        let rows = try await SQLiteDriver.open(path: env.home + "/paywarden.sqlite", create: false).keyRecords()
        #expect(rows.count == 5)
        #expect(rows.first { $0.keyID == key.id }?.certificate != nil)
        let hsm = try await env.token.open()
        let (certificates, records) = try await hsm.withSession { session throws(PKCS11Error) in
            (try session.findObjects([.objectClass(.certificate)]).count, try session.findObjects([.objectClass(.data)]).count)
        }
        #expect(certificates == 0 && records == 0)
        await hsm.close()
    }
}

@Suite(.serialized, .releasesTestResources)
struct ExpiryWarningTests {
    @Test func appleReminderScheduleAndStalePendingKeys() async throws {
        let token = try await TestToken.make()
        let hsm = try await token.open()
        let ca = try TestCertificateAuthority()
        let now = Date()
        let day: TimeInterval = 86_400
        let past = MerchantKeyStore(
            hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: ca.issuers, clock: { now.addingTimeInterval(-8 * day) })
        let store = MerchantKeyStore(hsm: hsm, records: TestKeyRecords.of(hsm), certificateIssuers: ca.issuers, clock: { now })

        _ = try await past.create(merchantID: "merchant.stale", purpose: .processing, algorithm: .ec)
        _ = try await past.create(merchantID: "relay.stale", purpose: .upstream, algorithm: .rsa)
        for (merchant, daysLeft) in [("merchant.d100", 100.0), ("merchant.d25", 25.0), ("merchant.d12", 12.0), ("merchant.d5", 5.0)] {
            let (_, csr) = try await store.create(merchantID: merchant, purpose: .processing, algorithm: .ec)
            let certificate = try ca.issue(
                csrPEM: csr, merchantID: merchant, purpose: .processing,
                notBefore: now.addingTimeInterval(-day), notAfter: now.addingTimeInterval(daysLeft * day + 3600))
            _ = try await store.importCertificate(MerchantCertificate(bytes: certificate))
        }
        let warnings = Dictionary(uniqueKeysWithValues: try await store.list().map { ($0.merchantID!, $0.warnings(at: now)) })
        #expect(warnings["merchant.d100"] == [])
        #expect(warnings["merchant.d25"] == ["certificate expires within 30 days (25 left): rotate now"])
        #expect(warnings["merchant.d12"] == ["certificate expires within 15 days (12 left): rotate now"])
        #expect(warnings["merchant.d5"] == ["certificate expires within 7 days (5 left): rotate now"])
        #expect(warnings["merchant.stale"] == ["pending for 8 days: import Apple's certificate or destroy the key"])
        // An upstream key waits for the processor's certificate, not Apple's.
        #expect(warnings["relay.stale"] == ["pending for 8 days: import the processor's certificate or destroy the key"])
        await hsm.close()
    }
}
