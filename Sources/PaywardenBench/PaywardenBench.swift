import Crypto
import Foundation
import PKCS11
import PKCS11Testing

/// `make bench`: PKCS#11 layer throughput next to the raw module's, measured in the same run
/// on the same SoftHSM store, alternating so both see the same machine noise.
///
/// Two figures for the layer: callers on the HSM's own workers (`withTaskExecutorPreference`,
/// how Paywarden's decryption runs) and callers on Swift's cooperative pool (one thread hop each
/// way per call).
///
/// Environment: BENCH_SECONDS (per measurement, default 3), BENCH_ROUNDS (default 3),
/// HSM_BENCH (path of the built hsm_bench).
@main
struct PaywardenBench {
    static func main() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seconds = Double(environment["BENCH_SECONDS"] ?? "") ?? 3
        let rounds = Int(environment["BENCH_ROUNDS"] ?? "") ?? 3
        guard let rawExecutable = environment["HSM_BENCH"], FileManager.default.isExecutableFile(atPath: rawExecutable) else {
            throw BenchError("set HSM_BENCH to the hsm_bench binary (make bench builds it)")
        }

        // One SoftHSM store for both; the raw bench gets a token of its own.
        let token = try await SoftHSMTestToken.make(labelPrefix: "bench-layer")
        _ = try await TokenInitializer.ensureToken(
            modulePath: HSMConfiguration.defaultModulePath, label: "bench", securityOfficerPIN: Array("5678".utf8), userPIN: Array("1234".utf8)
        )
        defer { SoftHSMTestToken.removeAll() }
        let raw = RawHSMBench(executable: rawExecutable, label: "bench", pin: "1234")
        try raw.createKeys()

        print("Paywarden PKCS#11 layer vs raw SoftHSM (hsm-bench), same run: \(rounds) rounds of \(seconds) s each, medians")
        print("load average at start: \(loadAverage())")
        var rows: [Row] = []
        for workers in [1, 2] {
            let hsm = try await token.open { $0.workers = workers }
            let layer = LayerBench(hsm: hsm)
            let key = try await hsm.generateKeyPair(KeySpecification(label: "bench-ec", algorithm: .ecP256, usage: [.derive, .sign]))
            let peers = (0..<64).map { _ in Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation) }
            let otherInfo = [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8) + [UInt8](repeating: 7, count: 32)
            let digest = [UInt8](repeating: 0x5A, count: 32)
            let inFlight = workers * 4
            let derive: @Sendable (Int) async throws -> Void = { index in
                _ = try await hsm.deriveConcatenationKDFKey(key.id, peerPoint: peers[index & 63], otherInfo: otherInfo)
            }
            let sign: @Sendable (Int) async throws -> Void = { _ in _ = try await hsm.signECDSA(key.id, digest: digest) }

            var ecdhRow = Row(operation: "ECDH derive + KDF (C_DigestKey) + destroy", rawName: "ecdh-kdf", workers: workers)
            var signRow = Row(operation: "ECDSA P-256 sign", rawName: "ecdsa", workers: workers)
            for _ in 0..<rounds {
                ecdhRow.raw.append(try raw.rate("ecdh-kdf", seconds: seconds, threads: workers) ?? 0)
                ecdhRow.onWorkers.append(try await layer.rate(seconds: seconds, inFlight: inFlight, onWorkers: true, derive))
                ecdhRow.hopping.append(try await layer.rate(seconds: seconds, inFlight: inFlight, onWorkers: false, derive))
                signRow.raw.append(try raw.rate("ecdsa", seconds: seconds, threads: workers) ?? 0)
                signRow.onWorkers.append(try await layer.rate(seconds: seconds, inFlight: inFlight, onWorkers: true, sign))
                signRow.hopping.append(try await layer.rate(seconds: seconds, inFlight: inFlight, onWorkers: false, sign))
            }
            rows.append(ecdhRow)
            rows.append(signRow)
            await hsm.close()
        }

        print(column("operation", 44) + column("workers", 9) + column("raw ops/s", 11) + column("layer ops/s", 13)
              + column("ratio", 8) + column("hop ops/s", 11) + "hop ratio")
        for row in rows {
            let raw = median(row.raw)
            print(column(row.operation, 44) + column(String(row.workers), 9) + column(format(raw), 11)
                  + column(format(median(row.onWorkers)), 13) + column(String(format: "%.2f", median(row.onWorkers) / max(raw, 1)), 8)
                  + column(format(median(row.hopping)), 11) + String(format: "%.2f", median(row.hopping) / max(raw, 1)))
        }
        print("raw: hsm_bench ecdh-kdf / ecdsa on the same SoftHSM store. layer: callers on the HSM workers (how decryption runs);")
        print("hop: callers on Swift's cooperative pool, one thread hop each way per call. Target: ratio >= 0.90.")
        print("load average at end: \(loadAverage())")
    }

    struct Row {
        let operation: String
        let rawName: String
        let workers: Int
        var raw: [Double] = []
        var onWorkers: [Double] = []
        var hopping: [Double] = []
    }

    static func column(_ text: String, _ width: Int) -> String {
        text.padding(toLength: max(width, text.count + 1), withPad: " ", startingAt: 0)
    }

    static func format(_ value: Double) -> String { String(format: "%.0f", value) }

    static func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
    }
}
