import ApplePay
import Crypto
import Foundation
import KeyCustody
import PKCS11
import PaywardenConfiguration
import PaywardenServer
import PaywardenTesting

/// `paywarden-bench loadtest-setup DIR COUNT [COUNT…]`: prepares a load test against the token
/// the environment names: a test PKI (its root in DIR/root.pem, for the trust-roots setting), a
/// certified EC processing key in the HSM, an API key (DIR/api-key, DIR/api-entry), and for
/// each COUNT a file DIR/tokens-N.jsonl of that many unique forged EC_v1 tokens, one per line.
enum LoadTestSetup {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count >= 2, let counts = Optional(arguments.dropFirst().compactMap(Int.init)), !counts.isEmpty else {
            throw BenchError("usage: paywarden-bench loadtest-setup DIR COUNT [COUNT…]")
        }
        let directory = arguments[0]
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let pki = try ApplePayTestPKI(name: "LoadTest", rsaLeaf: false)
        try pki.rootDER.pem("CERTIFICATE").write(toFile: directory + "/root.pem", atomically: true, encoding: .utf8)

        let settings = try await PaywardenSettings.load()
        let hsm = try await HSM.open(HSMConfiguration(settings: settings.hsm), probeCapabilities: false)
        let store = MerchantKeyStore(hsm: hsm)
        let merchantID = "merchant.com.example.loadtest"
        let (_, csr) = try await store.create(merchantID: merchantID, purpose: .processing, algorithm: .ec)
        let certificate = try TestCertificateAuthority().issue(csrPEM: csr, merchantID: merchantID, purpose: .processing)
        let merchant = try await store.importCertificate(MerchantCertificate(bytes: certificate)).key
        await hsm.close()

        let (key, entry) = APIKey.generate(name: "loadtest", scopes: [.decrypt])
        try key.write(toFile: directory + "/api-key", atomically: true, encoding: .utf8)
        try entry.write(toFile: directory + "/api-entry", atomically: true, encoding: .utf8)

        guard case .ecP256(let point) = merchant.key.publicKey else { throw BenchError("not EC") }
        let factory = Factory(
            forge: TokenForge(pki: pki), merchant: try .init(x963Representation: point),
            partyV: TokenForge.merchantIdentifierHash(merchantID), publicKeyHash: merchant.publicKeyHash)
        for (index, count) in counts.enumerated() {
            let path = directory + "/tokens-\(index + 1).jsonl"
            try await factory.write(count: count, to: path)
            print("\(count) tokens in \(path)")
        }
    }

    private struct Factory: Sendable {
        let forge: TokenForge
        let merchant: P256.KeyAgreement.PublicKey
        let partyV: [UInt8]
        let publicKeyHash: String

        /// Forges on every core, in chunks, appending line by line.
        func write(count: Int, to path: String) async throws {
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
                                data += try forge.ecV1(
                                    payload: PaymentPayloads.threeDSecure(), merchant: merchant, merchantIdentifierHash: partyV,
                                    options: options
                                )
                                .withPublicKeyHash(publicKeyHash)
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
}
