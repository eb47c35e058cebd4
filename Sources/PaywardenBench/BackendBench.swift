import ApplePay
import Foundation
import KeyCustody
import PKCS11
import PaywardenTesting

/// `paywarden-bench backends` (with RAW_PKCS11_BENCH set, as `make bench` does): the decryption
/// engine on each PKCS#11 implementation the tests use, SoftHSM and NSS softokn, next to the same
/// module's raw ECDH + Apple KDF (`scripts/raw_pkcs11_bench.c`, no Paywarden code) from the same
/// run: EC_v1 tokens/s with every verification step, at 1 and 2 workers, and the ratio.
struct BackendBench {
    let rawExecutable: String
    let seconds: Double
    let rounds: Int

    func run() async throws {
        print("\n== Each PKCS#11 implementation against its own raw figures (ECDH + KDF via C_DigestKey), medians of \(rounds)")
        print("backend    workers   raw ops/s   EC_v1 tokens/s   ratio")
        for backend in HSMTestBackend.allCases {
            let token = try await TestToken.make(labelPrefix: "bench-\(backend.rawValue)", backend: backend)
            let pki = try ApplePayTestPKI(name: "Backends")
            let bench = DecryptionBench(raw: RawHSMBench(executable: "", label: "", pin: ""), token: token, seconds: seconds, rounds: 1)
            let tokens = try await bench.certifiedTokens(merchantID: "merchant.backends.ec", count: Int(seconds * 9_000), pki: pki)
            let anchors = TrustAnchors(certificates: [pki.root], source: "backends root")
            for workers in [1, 2] {
                var raw: [Double] = []
                var engine: [Double] = []
                for _ in 0..<rounds {
                    // The raw module runs alone: no HSM of this process has the token open meanwhile.
                    raw.append(try rawRate(token, threads: workers))
                    let hsm = try await token.open {
                        $0.workers = workers
                        $0.maxPendingOperations = 100_000
                    }
                    engine.append(try await bench.engine(on: hsm, tokens: tokens, anchors: anchors, inFlight: workers * 4).rate)
                    await hsm.close()
                }
                let (rawRate, engineRate) = (median(raw), median(engine))
                let name = backend.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)
                print(name + String(format: " %7d %11.0f %16.0f   %.2f", workers, rawRate, engineRate, engineRate / max(rawRate, 1)))
            }
            token.destroy()
        }
        print("ratio: the engine's EC_v1 rate (ECDSA verification, decoding, ECDH + KDF, AES-GCM) over the raw ECDH + KDF rate")
    }

    /// `raw_pkcs11_bench MODULE LABEL PIN_FILE ecdh-kdf SECONDS THREADS` on the token.
    private func rawRate(_ token: TestToken, threads: Int) throws -> Double {
        var environment = ProcessInfo.processInfo.environment
        environment["SOFTHSM2_CONF"] = TestToken.sharedDirectory + "/softhsm2.conf"
        environment["PKCS11_INIT_RESERVED"] = token.initReserved
        let (status, output) = try RawHSMBench.output(
            of: rawExecutable, [token.modulePath, token.label, token.pinFile, "ecdh-kdf", String(seconds), String(threads)],
            environment: environment)
        guard status == 0, let range = output.range(of: #"=> ([0-9.]+) ops/s"#, options: .regularExpression),
            let rate = Double(output[range].dropFirst(3).split(separator: " ").first ?? "")
        else { throw BenchError("raw_pkcs11_bench failed on \(token.backend.rawValue): \(output)") }
        return rate
    }
}
