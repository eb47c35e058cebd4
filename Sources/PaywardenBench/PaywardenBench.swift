import Foundation
import PKCS11
import PaywardenConfiguration
import PaywardenServer
import PaywardenTesting

/// `make bench`: Paywarden's throughput next to the raw PKCS#11 module's (hsm-bench), measured
/// in the same run on the same SoftHSM store, alternating so both see the same machine noise.
///
/// Arguments: `pkcs11` and/or `decrypt` (default both); `profile` alone prints the software cost
/// of each decryption stage; `loadtest-setup`, `loadgen`, `engine`, `http-baseline`, `upstream`
/// and `collector` serve `make loadtest` and `make soak`, `loadtest-raw`, `loadtest-wrk`,
/// `loadtest-note`, `loadtest-value` and `loadtest-report` measure and report `make loadtest`, `ledger-footprint` the soak's
/// replay-ledger share, `fuzz-seeds` the seed corpora of `make fuzz`; `audit` what sealing the
/// audit trail costs.
/// Environment: BENCH_SECONDS (per measurement, default 3), BENCH_ROUNDS (default 3), HSM_BENCH
/// (the built hsm_bench).
@main
struct PaywardenBench {
    static func main() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seconds = Double(environment["BENCH_SECONDS"] ?? "") ?? 3
        let rounds = Int(environment["BENCH_ROUNDS"] ?? "") ?? 3
        let arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments.first {
        case "http-baseline":
            // As `paywarden serve` does, before anything else uses Swift concurrency.
            guard ServerThreads.install(eventLoops: try EarlySettings.eventLoopThreads()) else {
                throw BenchError("the event loops could not become Swift's global executor, unlike in paywarden serve")
            }
            try await HTTPBaselineServer.run(Array(arguments.dropFirst()))
            return
        case "engine":
            let line = try await DecryptionBench.engineLine(seconds: Double(arguments.dropFirst().first ?? "") ?? seconds)
            print(line)
            if arguments.count == 4, arguments[2] == "--record" {
                try LoadTestResults.record("engine", LoadTestResults.fields(of: line), work: arguments[3])
            }
            return
        case "loadtest-raw":
            try LoadTestSetup.rawECDH(Array(arguments.dropFirst()))
            return
        case "loadtest-wrk":
            try await WrkRun.run(Array(arguments.dropFirst()))
            return
        case "loadtest-note":
            try LoadTestResults.note(Array(arguments.dropFirst()))
            return
        case "loadtest-value":
            try LoadTestResults.value(Array(arguments.dropFirst()))
            return
        case "loadtest-report":
            try LoadTestReport.run(Array(arguments.dropFirst()))
            return
        case "upstream":
            try await UpstreamStandIn.run(Array(arguments.dropFirst()))
            return
        case "collector":
            try await CollectorStandIn.run(Array(arguments.dropFirst()))
            return
        case "profile":
            try await StageProfile.run()
            return
        case "loadtest-setup":
            try await LoadTestSetup.run(Array(arguments.dropFirst()))
            return
        case "latency":
            try await NetworkLatencyBench.run(Array(arguments.dropFirst()), rounds: rounds)
            return
        case "backends":
            guard let raw = environment["RAW_PKCS11_BENCH"], FileManager.default.isExecutableFile(atPath: raw) else {
                throw BenchError("set RAW_PKCS11_BENCH to the built scripts/raw_pkcs11_bench.c (make bench builds it)")
            }
            defer { TestToken.removeAll() }
            try await BackendBench(rawExecutable: raw, seconds: seconds, rounds: rounds).run()
            return
        case "copy-key-records":
            try await LoadTestSetup.copyKeyRecords(Array(arguments.dropFirst()))
            return
        case "loadgen":
            try await LoadGenerator.run(Array(arguments.dropFirst()))
            return
        case "ledger-footprint":
            try await LedgerFootprint.run(Array(arguments.dropFirst()))
            return
        case "audit":
            try await AuditBench(seconds: seconds, rounds: rounds).run()
            return
        case "fuzz-seeds":
            try FuzzSeeds.run(Array(arguments.dropFirst()))
            return
        default: break
        }
        var suites = Set(arguments)
        if suites.isEmpty { suites = ["pkcs11", "decrypt"] }
        guard let rawExecutable = environment["HSM_BENCH"], FileManager.default.isExecutableFile(atPath: rawExecutable) else {
            throw BenchError("set HSM_BENCH to the hsm_bench binary (make bench builds it)")
        }

        // One SoftHSM store for both; the raw bench gets a token of its own.
        let token = try await SoftHSMTestToken.make(labelPrefix: "bench-layer")
        _ = try await TokenInitializer.ensureToken(
            modulePath: SoftHSMTestToken.modulePath, label: "bench", securityOfficerPIN: Array("5678".utf8), userPIN: Array("1234".utf8)
        )
        defer { TestToken.removeAll() }
        let raw = RawHSMBench(executable: rawExecutable, label: "bench", pin: "1234")
        try raw.createKeys()

        print("Paywarden vs the raw SoftHSM module (hsm-bench), same run: \(rounds) rounds of \(seconds) s each, medians")
        print("load average at start: \(loadAverage())")
        if suites.contains("pkcs11") {
            print("\n== PKCS#11 layer")
            BenchRow.print(
                try await LayerBench(raw: raw, token: token, seconds: seconds, rounds: rounds).run(), paywardenColumn: "layer ops/s",
                target: """
                    layer: callers on the HSM workers (how decryption runs); hop: callers on Swift's cooperative pool,
                    one thread hop each way per call. Target: ratio >= 0.90 (on the token key, as hsm_bench).
                    Session copies: what decryption uses on SoftHSM (PAYWARDEN_HSM_SESSION_KEY_COPIES=auto).
                    """)
        }
        if suites.contains("decrypt") {
            print("\n== Decryption engine (unique forged tokens, replay protection on, every verification step)")
            var bench = DecryptionBench(raw: raw, token: token, seconds: seconds, rounds: rounds)
            BenchRow.print(
                try await bench.run(),
                paywardenColumn: "tokens/s",
                target: """
                    tokens/s: the decrypting tasks on the HSM workers; hop: on the cooperative pool, hopping to a worker
                    for the key operation; session key copies on. raw: ECDH derive+destroy, ECDH+KDF, or raw RSA-2048
                    decrypt, on the token key.
                    Target: EC_v1 at 2 workers >= 0.75 of raw 2-thread ECDH.
                    """)
            print("")
            let stages = try await StageProfile.run()
            printFloor(engine: bench.engine, stages: stages)
        }
        print("\nload average at end: \(loadAverage())")
    }

    /// The per-token floor: what one token cannot do without (the key operation on the path in
    /// use, one ECDSA verification, decoding), from this run's figures, and the engine as a ratio
    /// to it, by rate (2 workers on 2 cores) and by CPU per token (steadier on a shared machine).
    /// SoftHSM's derive does not scale to two threads (its locks and OpenSSL 3's), so the floor is
    /// also given with the derive rate the HSM itself reaches at 2 workers.
    static func printFloor(engine: DecryptionBench.EngineFigures, stages: StageProfile.Figures) {
        let derive = 1e6 / max(median(engine.deriveRate), 1)
        let deriveTwo = 2e6 / max(median(engine.deriveRateTwoWorkers), 1)
        let software = stages.ecdsaVerification + stages.decoding
        let floor = derive + software
        let floorTwo = deriveTwo + software
        let rate = median(engine.rate)
        let cpu = median(engine.cpuMicroseconds)
        print("\n== Per-token floor (this run) and the engine against it")
        print(
            String(
                format: "floor: ECDH+KDF on the path in use %.1f µs (%.0f/s, 1 worker) + one ECDSA verification %.1f µs"
                    + " + decoding %.1f µs = %.1f µs, %.0f tokens/s on 2 cores", derive, 1e6 / derive, stages.ecdsaVerification,
                stages.decoding, floor, 2e6 / floor))
        print(
            String(format: "engine: EC_v1 at 2 workers %.0f tokens/s = %.2f of the floor rate (target >= 0.85)", rate, rate * floor / 2e6))
        print(
            String(
                format: "with the HSM's own 2-worker derive (%.0f/s, %.2f of twice its 1-worker rate): %.1f core-µs per token,"
                    + " %.0f tokens/s; engine = %.2f of it", median(engine.deriveRateTwoWorkers), derive / deriveTwo, floorTwo,
                2e6 / floorTwo, rate * floorTwo / 2e6))
        print(String(format: "engine: %.1f µs of process CPU per token; floor / engine CPU = %.2f", cpu, floor / max(cpu, 1)))
    }

    static func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
    }
}
