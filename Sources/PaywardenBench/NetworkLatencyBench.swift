import ApplePay
import Foundation
import KeyCustody
import PKCS11
import PaywardenTesting

/// `paywarden-bench latency [SECONDS] [WORKERS] [MICROSECONDS]`: what an HSM across a network
/// costs the decryption engine. The fault-injecting module sleeps MICROSECONDS (default 1,000)
/// before every PKCS#11 call it forwards to SoftHSM, as a network round trip would; the engine
/// decrypts EC_v1 tokens (every verification step, on the HSM workers as the service does) on
/// WORKERS sessions (default 48), and again through the same module with no latency, alternating
/// for BENCH_ROUNDS rounds, and once directly on 2 workers, all in one run.
enum NetworkLatencyBench {
    static func run(_ arguments: [String], rounds: Int) async throws {
        let seconds = Double(arguments.first ?? "") ?? 5
        let workers = Int(arguments.dropFirst().first ?? "") ?? 48
        let latency = Int(arguments.dropFirst(2).first ?? "") ?? 1_000
        let token = try await SoftHSMTestToken.make(labelPrefix: "bench-latency")
        defer { TestToken.removeAll() }
        let bench = DecryptionBench(raw: RawHSMBench(executable: "", label: "", pin: ""), token: token, seconds: seconds, rounds: 1)
        let pki = try ApplePayTestPKI(name: "Latency")
        // One set of tokens for every run: each run has a decrypter (and replay cache) of its own.
        let tokens = try await bench.certifiedTokens(merchantID: "merchant.latency.ec", count: Int(seconds * 10_000), pki: pki)
        let anchors = TrustAnchors(certificates: [pki.root], source: "latency root")
        let device = try FaultInjectingPKCS11.make()
        var rates: [String: [Double]] = [:]
        // The machine is shared and noisy: the runs alternate, and the medians are compared.
        let runs =
            [("direct", false, 0, 2)]
            + Array(repeating: [("module", true, 0, workers), ("network", true, latency, workers)], count: rounds)
            .joined()
        for (name, viaDevice, delay, sessions) in runs {
            try device.addLatency("*", microseconds: delay)
            let configure: @Sendable (inout HSMConfiguration) -> Void = {
                $0.workers = sessions
                $0.maxPendingOperations = 100_000
            }
            let hsm = viaDevice ? try await device.open(token, configure) : try await token.open(configure)
            let figure = try await bench.engine(on: hsm, tokens: tokens, anchors: anchors, inFlight: sessions * 2) { device.resetCalls() }
            let calls = Double(try device.calls("*")) / Double(max(figure.count, 1))
            await hsm.close()
            rates[name, default: []].append(figure.rate)
            print(
                "LATENCY run=\(name) workers=\(sessions) latency_us=\(delay)"
                    + String(
                        format: " rate=%.0f cpu_us=%.1f tokens=%d pkcs11_calls_per_token=%.2f", figure.rate, figure.cpuMicroseconds,
                        figure.count, viaDevice ? calls : .nan))
        }
        try device.addLatency("*", microseconds: 0)
        let (network, module, direct) = (median(rates["network"] ?? []), median(rates["module"] ?? []), median(rates["direct"] ?? []))
        print(
            String(
                format: "LATENCY medians of %d: network %.0f/s = %.2f of the same %d workers without latency (target >= 0.8), "
                    + "%.2f of 2 workers on SoftHSM directly", rounds, network, network / max(module, 1), workers, network / max(direct, 1))
        )
    }
}
