import Crypto
import Foundation
import KeyCustody
import PKCS11
import PaywardenTestTraits
import PaywardenTesting
import Testing

@Suite(.serialized, .releasesTestResources)
struct LifecycleTests {
    /// From nothing to an active processing key, then a rotation, two active keys, retirement
    /// and destruction, all through the CLI, every step audited.
    @Test func createImportRotateRetireDestroy() async throws {
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca)
        let merchant = "merchant.com.example.shop"

        // create: a pending key and a CSR the HSM signed, which OpenSSL verifies.
        let created = try env.paywarden("keys", "create", "--merchant-id", merchant, "--csr-out", env.home + "/first.csr", "--json")
        #expect(created.status == 0, "\(created.stderr)")
        let first = try AdminTestEnvironment.key(in: created)
        #expect(first.state == "pending")
        #expect(first.type == "ec")
        let verify = try run("/usr/bin/openssl", ["req", "-in", env.home + "/first.csr", "-noout", "-verify"])
        #expect(verify.status == 0)
        #expect(verify.output.contains("verify OK"))

        // import-certificate: Apple's certificate activates the key.
        let csr = try String(contentsOfFile: env.home + "/first.csr", encoding: .utf8)
        let certificatePath = try env.write(try ca.issue(csrPEM: csr, merchantID: merchant, purpose: .processing), named: "first.cer")
        let imported = try env.paywarden("keys", "import-certificate", certificatePath, "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        let active = try AdminTestEnvironment.key(in: imported)
        #expect(active.state == "active")
        #expect(active.publicKeyHash == first.publicKeyHash)
        #expect((759...762).contains(active.daysLeft ?? 0))
        // Importing it again changes nothing and says so.
        let again = try env.paywarden("keys", "import-certificate", certificatePath)
        #expect(again.status == 0)
        #expect(again.stderr.contains("already imported"))

        // rotate: a successor and its CSR while the current key stays active.
        let rotated = try env.paywarden("keys", "rotate", "--merchant-id", merchant, "--csr-out", env.home + "/second.csr", "--json")
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let second = try AdminTestEnvironment.key(in: rotated)
        #expect(second.state == "pending")
        let secondCSR = try String(contentsOfFile: env.home + "/second.csr", encoding: .utf8)
        let secondCertificate = try env.write(
            try ca.issue(csrPEM: secondCSR, merchantID: merchant, purpose: .processing), named: "second.cer")
        #expect(try env.paywarden("keys", "import-certificate", secondCertificate).status == 0)
        let both = try env.listedKeys()
        #expect(both.map(\.state) == ["active", "active"])
        #expect(Set(both.map(\.id)) == [first.id, second.id])

        // retire the old key: it is still listed (and still decrypts), flagged retired.
        let retired = try env.paywarden("keys", "retire", String(first.id.prefix(10)), "--json")
        #expect(retired.status == 0, "\(retired.stderr)")
        #expect(try AdminTestEnvironment.key(in: retired).state == "retired")

        // destroy needs --yes, and refuses an active key.
        let unconfirmed = try env.paywarden("keys", "destroy", first.id)
        #expect(unconfirmed.status == 1)
        #expect(
            unconfirmed.stderr
                == "paywarden: destroying key \(first.id) is irreversible: tokens encrypted to it can never be decrypted again; repeat "
                + "with --yes\n"
        )
        let activeRefused = try env.paywarden("keys", "destroy", second.id, "--yes")
        #expect(activeRefused.status == 1)
        #expect(activeRefused.stderr.contains("is active and may still receive tokens; retire it first"))
        let destroyed = try env.paywarden("keys", "destroy", first.id, "--yes")
        #expect(destroyed.status == 0, "\(destroyed.stderr)")
        #expect(try env.listedKeys().map(\.id) == [second.id])

        // The HSM holds nothing of the destroyed key: no key, certificate or record objects.
        let hsm = try await env.token.open()
        let leftovers = try await hsm.withSession { session throws(PKCS11Error) in
            try session.findObjects([.id(KeyIdentifier(hex: first.id)!)]).count
        }
        #expect(leftovers == 0)
        await hsm.close()

        // Every action is in the audit log, with its outcome and no secrets.
        let audit = try env.audit()
        #expect(
            audit.map(\.action) == [
                "keys.create", "keys.import-certificate", "keys.import-certificate", "keys.rotate", "keys.import-certificate",
                "keys.list", "keys.retire", "keys.destroy", "keys.destroy", "keys.destroy", "keys.list",
            ])
        #expect(audit.map(\.result) == ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "refused", "refused", "ok", "ok"])
        #expect(audit[0].keyID == first.id && audit[0].merchantID == merchant)
        #expect(audit.allSatisfy { !$0.user.isEmpty })
        let auditText = try String(contentsOfFile: env.home + "/audit/audit.jsonl", encoding: .utf8)
        let pin = try String(contentsOfFile: env.token.pinFile, encoding: .utf8)
        #expect(!auditText.contains(pin))
    }

    /// A running service decrypts with session copies of its keys (SoftHSM). When an
    /// administrator's CLI, another process, destroys a key, the service's next listing ends
    /// every copy of it.
    @Test func aKeyDestroyedByTheCLILeavesNoSoftHSMSessionCopyBehind() async throws {
        let env = try await AdminTestEnvironment.make(backend: .softHSM)
        let created = try env.paywarden("keys", "create", "--merchant-id", "merchant.copied", "--json")
        #expect(created.status == 0, "\(created.stderr)")
        let id = try #require(KeyIdentifier(hex: try AdminTestEnvironment.key(in: created).id))
        let hsm = try await env.token.open()
        #expect(hsm.usesSessionKeyCopies)
        _ = try await hsm.deriveConcatenationKDFKey(
            id, peerPoint: Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation), otherInfo: [1])
        let privateKeys = { () async throws -> Int in
            // This key's objects only: the token also holds the audit trail's signing key.
            try await hsm.withSession { session throws(PKCS11Error) in try session.findObjects([.objectClass(.privateKey), .id(id)]).count }
        }
        #expect(try await privateKeys() == 2, "the token key and one worker's copy")

        let destroyed = try env.paywarden("keys", "destroy", id.hex, "--yes")
        #expect(destroyed.status == 0, "\(destroyed.stderr)")
        let recycles = hsm.recycles
        #expect(try await MerchantKeyStore(hsm: hsm, records: env.keyRecords()).list().isEmpty)
        #expect(hsm.recycles == recycles + 1)
        #expect(try await privateKeys() == 0)
        await hsm.close()
    }

    /// A second instance on the same HSM and database sees the same keys and states: the keys live
    /// in the HSM, their records in the database, so an instance with a database of its own does not.
    @Test func stateIsSharedThroughTheHSMAndTheDatabase() async throws {
        let env = try await AdminTestEnvironment.make()
        let created = try env.paywarden("keys", "create", "--merchant-id", "merchant.shared", "--type", "rsa", "--json")
        #expect(created.status == 0, "\(created.stderr)")
        let key = try AdminTestEnvironment.key(in: created)
        // Another home (another machine's files), same token, same database.
        var other = env.cli
        other.environment["PAYWARDEN_HOME"] = NSTemporaryDirectory() + "paywarden-other-\(UUID().uuidString.prefix(6))"
        other.environment["PAYWARDEN_DATABASE_URL"] = "sqlite:" + env.home + "/paywarden.sqlite"
        let listed = try other.run(["keys", "list", "--json"])
        #expect(listed.status == 0)
        #expect(listed.stdout.contains(key.id))
        #expect(listed.stdout.contains("\"state\" : \"pending\""))
        #expect(key.type == "rsa")
        // The same token with another database: the key is in the HSM, but not Paywarden's there.
        other.environment["PAYWARDEN_DATABASE_URL"] = nil
        let elsewhere = try other.run(["keys", "list", "--json"])
        #expect(elsewhere.status == 0)
        #expect(!elsewhere.stdout.contains(key.id))
    }

    @Test func identityKeysAreRSAAndTakeIdentityCertificates() async throws {
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca)
        let refused = try env.paywarden("keys", "create", "--merchant-id", "merchant.id", "--purpose", "identity", "--type", "ec")
        #expect(refused.status == 1)
        #expect(refused.stderr == "paywarden: Apple accepts only RSA-2048 for identity keys; use --type rsa\n")
        let created = try env.paywarden("keys", "create", "--merchant-id", "merchant.id", "--purpose", "identity", "--csr-out", "-")
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stdout.hasPrefix("-----BEGIN CERTIFICATE REQUEST-----"))
        let verify = try run("/usr/bin/openssl", ["req", "-noout", "-verify"], input: Data(created.stdout.utf8))
        #expect(verify.status == 0)
        let certificate = try ca.issue(csrPEM: created.stdout, merchantID: "merchant.id", purpose: .identity)
        let imported = try env.paywarden("keys", "import-certificate", "-", "--json", input: Data(certificate.pem("CERTIFICATE").utf8))
        #expect(imported.status == 0, "\(imported.stderr)")
        let key = try AdminTestEnvironment.key(in: imported)
        #expect(key.purpose == "identity")
        #expect(key.type == "rsa")
        #expect(key.state == "active")
    }

    /// A processor upstream's TLS client key: made in the HSM with a CSR, certified by the
    /// processor's CA (not Apple's, and not pinned), the certificate imported for it.
    @Test func upstreamKeysAreRSAAndTakeTheProcessorsCertificate() async throws {
        let env = try await AdminTestEnvironment.make()
        let refused = try env.paywarden("keys", "create", "--merchant-id", "relay.cnp", "--purpose", "upstream", "--type", "ec")
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("RSA-2048 for upstream keys"), "\(refused.stderr)")
        let created = try env.paywarden("keys", "create", "--merchant-id", "relay.cnp", "--purpose", "upstream", "--csr-out", "-")
        #expect(created.status == 0, "\(created.stderr)")
        let verify = try run("/usr/bin/openssl", ["req", "-noout", "-verify"], input: Data(created.stdout.utf8))
        #expect(verify.status == 0)
        #expect(try env.listedKeys().map(\.purpose) == ["upstream"])

        // A PEM client key of today's deployments (RSA), to move into the HSM below.
        let pem = (key: env.home + "/pem-client.key", csr: env.home + "/pem-client.csr")
        let request = try run(
            "/usr/bin/openssl",
            ["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", pem.key, "-subj", "/CN=relay", "-out", pem.csr])
        #expect(request.status == 0, "\(request.output)")

        let processor = try await ProcessorUpstreamStandIn.start(tls: true)
        let certificate = try processor.issueClientCertificate(csrPEM: created.stdout)
        let strangers = try processor.writeClientIdentity(to: env.home)
        let pemCertificate = try env.write(
            try processor.issueClientCertificate(csrPEM: try String(contentsOfFile: pem.csr, encoding: .utf8)), named: "pem-client.cer")
        try await processor.stop()

        // A processor's client certificate for no key here: refused, nothing changes.
        let unmatched = try env.paywarden("keys", "import-certificate", strangers.certificate)
        #expect(unmatched.status != 0)
        #expect(unmatched.stderr.contains("no key in the HSM matches"), "\(unmatched.stderr)")

        let imported = try env.paywarden("keys", "import-certificate", "-", "--json", input: Data(certificate.pem("CERTIFICATE").utf8))
        #expect(imported.status == 0, "\(imported.stderr)")
        // Not checked against Apple's issuers, so no warning about replacing them either.
        #expect(!imported.stderr.contains("warning"), "\(imported.stderr)")
        let key = try AdminTestEnvironment.key(in: imported)
        #expect(key.purpose == "upstream")
        #expect(key.type == "rsa")
        #expect(key.state == "active")
        #expect(key.merchantId == "relay.cnp")

        // The PEM key moves into the HSM with its certificate, active at once.
        let moved = try env.paywarden(
            "keys", "import", "--key", pem.key, "--certificate", pemCertificate, "--purpose", "upstream", "--merchant-id", "relay.radial",
            "--json")
        #expect(moved.status == 0, "\(moved.stderr)")
        let movedKey = try AdminTestEnvironment.key(in: moved)
        #expect(movedKey.purpose == "upstream" && movedKey.state == "active" && movedKey.type == "rsa")

        // Which key each upstream is presented, as the service records it: keys list shows it.
        let since = Date(timeIntervalSince1970: 1_800_000_000)
        _ = try await env.keyRecords().recordUpstreamClientKey(.init(upstream: "cnpapi", keyID: movedKey.id, since: since))
        let listed = try env.paywarden("keys", "list")
        let line = try #require(listed.stdout.split(separator: "\n").first { $0.hasPrefix(movedKey.id) })
        #expect(line.hasSuffix("in use by the cnpapi upstream since 2027-01-15T08:00:00Z"), "\(line)")
        let other = try #require(listed.stdout.split(separator: "\n").first { $0.hasPrefix(key.id) })
        #expect(!other.contains("in use"), "\(other)")
        let json = try env.listedKeys()
        #expect(json.first { $0.id == movedKey.id }?.inUse == [.init(upstream: "cnpapi", since: since)])
        #expect(json.first { $0.id == key.id }?.inUse == [])
    }
}

/// Runs a tool; stdout and stderr together, as a person at a terminal sees them.
func run(_ executable: String, _ arguments: [String], input: Data? = nil) throws -> (status: Int32, output: String) {
    let output = try ChildProcess.run(executable, arguments, input: input)
    return (output.status, output.stdout + output.stderr)
}
