import ApplePay
import Crypto
import Foundation
import KeyCustody
import Logging
import PKCS11
import PaywardenConfiguration
import PaywardenDatabase
import PaywardenPrimitives
import PaywardenServer
import PaywardenServices
import PaywardenStorageSQLite
import PaywardenTesting

/// `paywarden-bench loadtest-setup DIR COUNT [COUNT…] [--peer COUNT] [--vault PAYPAGE ORGANIZATION FORMS]`: prepares
/// a load test against the token the environment names: a test PKI (its root in DIR/root.pem, for
/// the trust-roots setting), a certified EC processing key in the HSM, an API key (DIR/api-key,
/// DIR/api-entry), and for each COUNT a file DIR/tokens-N.jsonl of that many unique forged EC_v1
/// tokens, one per line. With `--vault`: the key's merchant identifier (DIR/merchant-id, for
/// `paywarden paypages create`), a `redeem` API key of ORGANIZATION (DIR/vault-key,
/// DIR/vault-entry) and DIR/forms.txt, FORMS more unique tokens as eProtect registration forms
/// for PAYPAGE, one `application/x-www-form-urlencoded` body per line. The forms are forged last:
/// the registration runs come after the decrypt runs, so their signing times had better be the newest.
/// With `--peer`: the load test's peer (scripts/applepay_peer.py) gets a software P-256 key and a
/// processing certificate of the same PKI (DIR/peer-key.pem, DIR/peer-certificate.pem, the root as
/// DIR/root.der) and DIR/peer-tokens.jsonl, COUNT tokens encrypted to that key.
///
/// `paywarden-bench loadtest-setup DIR --batches N COUNT` (`make soak`): the same set-up, then N
/// files of COUNT tokens, each forged only once the one before it is taken (deleted by the
/// driver), so that a long run never holds more than two batches on disk; each file appears whole
/// (written aside, then renamed).
enum LoadTestSetup {
    static let usage =
        "usage: paywarden-bench loadtest-setup DIR COUNT [COUNT…] [--peer COUNT] [--vault PAYPAGE ORGANIZATION FORMS]"
        + " | DIR --batches N COUNT"

    static func run(_ arguments: [String]) async throws {
        var arguments = arguments
        var vault: (paypage: String, organization: OrganizationID, forms: Int)?
        if let flag = arguments.firstIndex(of: "--vault") {
            guard arguments.count == flag + 4, let forms = Int(arguments[flag + 3]), forms > 0 else { throw BenchError(usage) }
            vault = (arguments[flag + 1], OrganizationID(arguments[flag + 2]), forms)
            arguments.removeSubrange(flag...)
        }
        var peerTokens: Int?
        if let flag = arguments.firstIndex(of: "--peer") {
            guard arguments.count == flag + 2, let count = Int(arguments[flag + 1]), count > 0 else { throw BenchError(usage) }
            peerTokens = count
            arguments.removeSubrange(flag...)
        }
        var batches: Int?
        if arguments.count == 4, arguments[1] == "--batches", let count = Int(arguments[2]), count > 0, vault == nil {
            batches = count
            arguments.removeSubrange(1...2)
        }
        let counts = arguments.dropFirst().compactMap(Int.init)
        guard arguments.count >= 2, counts.count == arguments.count - 1, counts.allSatisfy({ $0 > 0 }) else { throw BenchError(usage) }
        let directory = arguments[0]
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let pki = try ApplePayTestPKI(name: "LoadTest", rsaLeaf: false)
        try pki.rootDER.pem("CERTIFICATE").write(toFile: directory + "/root.pem", atomically: true, encoding: .utf8)

        let settings = try await PaywardenSettings.load()
        let hsm = try await HSM.open(HSMConfiguration(settings: settings.hsm), probeCapabilities: false)
        let merchantID = "merchant.com.example.loadtest"
        // The key's record goes to the settings' database, as `paywarden keys create` would put it
        // (with memory:, the SQLite file under the home that serve reads key records from then).
        let connection = try DatabaseConnection.open(settings.database, logger: Logger(label: "paywarden-bench"))
        let merchant = try await connection.withServices { _ in
            _ = try await connection.prepareSchema(migratingAutomatically: true)
            let store = MerchantKeyStore(
                hsm: hsm, records: connection.keyRecords, certificateIssuers: TestCertificateAuthority.shared.issuers)
            let (_, csr) = try await store.create(merchantID: merchantID, purpose: .processing, algorithm: .ec)
            let certificate = try TestCertificateAuthority.shared.issue(csrPEM: csr, merchantID: merchantID, purpose: .processing)
            return try await store.importCertificate(MerchantCertificate(bytes: certificate)).key
        }
        await hsm.close()

        let (key, entry) = APIKey.generate(name: "loadtest", scopes: [.decrypt])
        try key.write(toFile: directory + "/api-key", atomically: true, encoding: .utf8)
        try entry.write(toFile: directory + "/api-entry", atomically: true, encoding: .utf8)

        guard case .ecP256(let point) = merchant.key.publicKey else { throw BenchError("not EC") }
        let factory = Factory(
            forge: TokenForge(pki: pki), merchant: try .init(x963Representation: point),
            partyV: TokenForge.merchantIdentifierHash(merchantID), publicKeyHash: merchant.publicKeyHash)
        if let batches, let count = counts.first {
            for batch in 1...batches {
                let previous = directory + "/tokens-\(batch - 1).jsonl"
                while FileManager.default.fileExists(atPath: previous) { try await Task.sleep(for: .milliseconds(200)) }
                let path = directory + "/tokens-\(batch).jsonl"
                try await factory.write(count: count, to: path + ".part")
                try FileManager.default.moveItem(atPath: path + ".part", toPath: path)
                print("\(count) tokens in \(path)")
            }
            return
        }
        for (index, count) in counts.enumerated() {
            let path = directory + "/tokens-\(index + 1).jsonl"
            try await factory.write(count: count, to: path)
            print("\(count) tokens in \(path)")
        }
        if let peerTokens { try await writePeer(count: peerTokens, forge: factory.forge, pki: pki, to: directory) }
        guard let vault else { return }
        try merchantID.write(toFile: directory + "/merchant-id", atomically: true, encoding: .utf8)
        let (vaultKey, vaultEntry) = APIKey.generate(name: "loadtest-vault", scopes: [.redeem], organization: vault.organization)
        try vaultKey.write(toFile: directory + "/vault-key", atomically: true, encoding: .utf8)
        try vaultEntry.write(toFile: directory + "/vault-entry", atomically: true, encoding: .utf8)
        let path = directory + "/forms.txt"
        try await factory.write(count: vault.forms, to: path) { token in
            try EProtectForms.form(token: token, paypageID: vault.paypage, reportGroup: "loadtest")
        }
        print("\(vault.forms) eProtect forms for paypage \(vault.paypage) in \(path)")
    }

    /// The peer's key, certificate and tokens (see the type's comment).
    private static func writePeer(count: Int, forge: TokenForge, pki: ApplePayTestPKI, to directory: String) async throws {
        let merchantID = "merchant.com.example.loadtest-peer"
        let key = P256.KeyAgreement.PrivateKey()
        let certificate = try TestCertificateAuthority.shared.issue(
            publicKey: .init(P256.Signing.PublicKey(rawRepresentation: key.publicKey.rawRepresentation)), merchantID: merchantID,
            purpose: .processing)
        try key.pemRepresentation.write(toFile: directory + "/peer-key.pem", atomically: true, encoding: .utf8)
        try certificate.pem("CERTIFICATE").write(toFile: directory + "/peer-certificate.pem", atomically: true, encoding: .utf8)
        try Data(pki.rootDER).write(to: URL(fileURLWithPath: directory + "/root.der"))
        let peer = Factory(
            forge: forge, merchant: key.publicKey, partyV: TokenForge.merchantIdentifierHash(merchantID),
            publicKeyHash: Data(SHA256.hash(data: key.publicKey.derRepresentation)).base64EncodedString())
        try await peer.write(count: count, to: directory + "/peer-tokens.jsonl")
        print("\(count) tokens for the peer in \(directory)/peer-tokens.jsonl")
    }

    private struct Factory: Sendable {
        let forge: TokenForge
        let merchant: P256.KeyAgreement.PublicKey
        let partyV: [UInt8]
        let publicKeyHash: String

        /// Forges on every core, in chunks, appending line by line: each token as `line` makes it
        /// (by default the token's JSON itself), which must not hold a newline.
        func write(count: Int, to path: String, line: @escaping @Sendable ([UInt8]) throws -> [UInt8] = { $0 }) async throws {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            let chunk = 10_000
            var written = 0
            while written < count {
                let size = min(chunk, count - written)
                let parts = ProcessInfo.processInfo.activeProcessorCount
                let lines = try await withThrowingTaskGroup(of: Data.self) { group in
                    for part in 0..<parts {
                        let share = size / parts + (part < size % parts ? 1 : 0)
                        group.addTask {
                            var data = Data()
                            for _ in 0..<share {
                                var options = TokenForge.Options()
                                options.applicationData = Array(SHA256.hash(data: Data(UUID().uuidString.utf8)))
                                data += try line(
                                    forge.ecV1(
                                        payload: PaymentPayloads.threeDSecure(), merchant: merchant, merchantIdentifierHash: partyV,
                                        options: options
                                    )
                                    .withPublicKeyHash(publicKeyHash))
                                data.append(0x0A)
                            }
                            return data
                        }
                    }
                    return try await group.reduce(into: Data()) { $0 += $1 }
                }
                try handle.write(contentsOf: lines)
                written += size
            }
        }
    }

    /// `loadtest-raw WORK`: the raw HSM's ECDH rate at 2 threads for 5 s (hsm_bench, HSM_BENCH, on
    /// the token `bench` of the SoftHSM store SOFTHSM2_CONF names), recorded as the run `raw`.
    static func rawECDH(_ arguments: [String]) throws {
        guard arguments.count == 1 else { throw BenchError("usage: paywarden-bench loadtest-raw WORK") }
        guard let executable = ProcessInfo.processInfo.environment["HSM_BENCH"] else {
            throw BenchError("set HSM_BENCH to the built hsm_bench")
        }
        let raw = RawHSMBench(executable: executable, label: "bench", pin: "1234")
        try raw.createKeys()
        guard let rate = try raw.rate("ecdh", seconds: 5, threads: 2) else { throw BenchError("hsm_bench printed no ECDH rate") }
        print(String(format: "raw ECDH: %.0f derives/s", rate))
        try LoadTestResults.record("raw", ["rate": String(format: "%.0f", rate)], work: arguments[0])
    }

    /// `copy-key-records SQLITE_PATH`: copies the merchant-key records of the SQLite database at
    /// SQLITE_PATH (where `loadtest-setup` put them) into the settings' database, migrated first:
    /// what an operator's admin commands would have written there.
    static func copyKeyRecords(_ arguments: [String]) async throws {
        guard arguments.count == 1 else { throw BenchError("usage: paywarden-bench copy-key-records SQLITE_PATH") }
        let rows = try await SQLiteDriver.open(path: arguments[0], create: false).keyRecords()
        let settings = try await PaywardenSettings.load()
        let connection = try DatabaseConnection.open(settings.database, logger: Logger(label: "paywarden-bench"))
        try await connection.withServices { _ in
            _ = try await connection.prepareSchema(migratingAutomatically: true)
            for row in rows { _ = try await connection.keyRecords.insertKeyRecord(row) }
        }
    }
}
