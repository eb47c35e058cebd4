import Foundation

/// `paywarden-bench loadtest-report WORK`: the summary of `make loadtest` from the runs it
/// recorded (LoadTestResults): each run beside the baselines measured in the same invocation (the
/// raw HSM, the engine in process, `memory:`, the HTTP floor, the peer), then every goal, met or
/// missed. The goals are data (`goals`): a new one is a line.
struct LoadTestReport {
    /// A figure computed from the results; nil when a run it needs was skipped.
    indirect enum Figure: Sendable {
        case field(_ run: String, _ field: String)
        case ratio(Figure, Figure)
        case difference(Figure, Figure)
        /// The median of `field` over the repeated runs `prefix-1`, `prefix-2`, …
        case median(_ prefix: String, _ field: String)
        /// The sum of `field` over every run of Paywarden's (the peer and the HTTP floor are not).
        case total(_ field: String)

        func value(in results: LoadTestResults) -> Double? {
            switch self {
            case .field(let run, let field): return results.number(run, field)
            case .ratio(let a, let b):
                guard let a = a.value(in: results), let b = b.value(in: results), b > 0 else { return nil }
                return a / b
            case .difference(let a, let b):
                guard let a = a.value(in: results), let b = b.value(in: results) else { return nil }
                return a - b
            case .median(let prefix, let field):
                let values = results.series(prefix).compactMap { results.number($0, field) }
                return values.isEmpty ? nil : middle(values)
            case .total(let field):
                let values = results.runs.filter { !["peer", "baseline"].contains($0.key) }.values.compactMap {
                    $0[field].flatMap(Double.init)
                }
                return values.isEmpty ? nil : values.reduce(0, +)
            }
        }
    }

    struct Goal: Sendable {
        enum Bound: Sendable {
            case atLeast(Double)
            case atMost(Double)
        }

        let name: String
        let figure: Figure
        let bound: Bound
    }

    /// What the service should reach on a 2-core machine with the load generator beside it, each
    /// figure against its baseline of the same invocation.
    static let goals: [Goal] = [
        Goal(
            name: "decrypts/s, SQLite ÷ memory:", figure: .ratio(.field("sqlite", "rate"), .field("memory", "rate")),
            bound: .atLeast(0.85)),
        Goal(
            name: "server CPU of the durable claim, SQLite − memory: (µs per decrypt)",
            figure: .difference(.field("sqlite", "cpu_us"), .field("memory", "cpu_us")), bound: .atMost(40)),
        Goal(
            name: "decrypt p99 at full load, SQLite ÷ memory:", figure: .ratio(.field("sqlite", "p99"), .field("memory", "p99")),
            bound: .atMost(2)),
        Goal(
            name: "decrypts/s, SQLite ÷ raw ECDH at 2 threads", figure: .ratio(.field("sqlite", "rate"), .field("raw", "rate")),
            bound: .atLeast(0.5)),
        Goal(
            name: "decrypts/s, SQLite ÷ the applepay peer", figure: .ratio(.field("sqlite", "rate"), .field("peer", "rate")),
            bound: .atLeast(0.6)),
        Goal(
            name: "eProtect registrations/s ÷ decrypts/s, SQLite",
            figure: .ratio(.field("register-sqlite", "rate"), .field("sqlite", "rate")), bound: .atLeast(0.8)),
        Goal(
            name: "redemptions/s ÷ decrypts/s, SQLite", figure: .ratio(.field("redeem-sqlite", "rate"), .field("sqlite", "rate")),
            bound: .atLeast(0.8)),
        Goal(
            name: "decrypts/s, PostgreSQL ÷ memory:", figure: .ratio(.field("postgres", "rate"), .field("memory", "rate")),
            bound: .atLeast(0.7)),
        Goal(
            name: "decrypts/s, network HSM (1 ms a call) ÷ memory:", figure: .ratio(.field("network", "rate"), .field("memory", "rate")),
            bound: .atLeast(0.8)),
        Goal(
            name: "decrypts/s, tracing on ÷ off", figure: .ratio(.field("tracing", "rate"), .field("memory", "rate")),
            bound: .atLeast(0.9)),
        Goal(name: "decrypt p99 at half rate, median of the runs (ms)", figure: .median("half", "p99"), bound: .atMost(10)),
        Goal(name: "redemption p99 at half rate, median of the runs (ms)", figure: .median("redeem-half", "p99"), bound: .atMost(5)),
        Goal(name: "errors, every run of Paywarden's", figure: .total("errors"), bound: .atMost(0)),
    ]

    let results: LoadTestResults

    static func run(_ arguments: [String]) throws {
        guard arguments.count == 1 else { throw BenchError("usage: paywarden-bench loadtest-report WORK") }
        LoadTestReport(results: try LoadTestResults(work: arguments[0])).print()
    }

    /// The decrypt runs, in the order measured: the databases, then the last one in pool dispatch.
    var decryptRuns: [String] {
        let databases = ["memory", "sqlite", "postgres"].filter { results.runs[$0] != nil }
        return databases + databases.suffix(1).map { "\($0)-pool" }.filter { results.runs[$0] != nil }
    }

    func print() {
        let r = results
        Swift.print(
            "\n== Paywarden load test (loopback, load generator on the same 2 cores), \(r.text("settings", "tokens") ?? "?") tokens per run"
        )
        Swift.print("raw HSM ECDH:      \(r.text("raw", "rate") ?? "?") derives/s (hsm-bench, 2 threads, same run)")
        Swift.print(
            "engine:            \(r.text("engine", "rate") ?? "?") tokens/s, \(r.text("engine", "cpu_us") ?? "?") µs CPU per token"
                + " (EC_v1 in process, 2 workers, same run)")
        if r.runs["peer"] != nil {
            Swift.print(
                closedLoop("peer", unit: "tokens/s")
                    + " (PyPI applepay 0.3.0, uvicorn 2 workers: software key, no signature check, no replay ledger)")
        }
        for run in decryptRuns + ["tracing", "network"] where r.runs[run] != nil {
            var text = closedLoop(run, unit: "tokens/s") + "  \(ratio(run, "raw")) of raw ECDH"
            if run != "memory" { text += "  \(ratio(run, "memory")) of memory  p99 \(ratio(run, "memory", "p99")) x memory's" }
            if r.runs["peer"] != nil { text += "  \(ratio(run, "peer")) of the peer" }
            text +=
                "  \(r.text(run, "dispatch") ?? "?") dispatch"
                + "  RSS \(r.text(run, "rss_before") ?? "?") -> \(r.text(run, "rss_after") ?? "?") kB"
            Swift.print(text)
        }
        if let network = r.runs["network"] {
            Swift.print(
                "network: every PKCS#11 call \(network["latency_us"] ?? "?") µs late, \(network["workers"] ?? "?") HSM workers,"
                    + " \(network["connections"] ?? "?") connections")
        }
        Swift.print("== HTTP against the engine (server CPU from /proc over each run, per request)")
        Swift.print(
            "HTTP floor:   \(r.text("baseline", "rate") ?? "?") requests/s  \(r.text("baseline", "cpu_us") ?? "?") µs CPU per request"
                + " (static \(r.text("baseline", "bytes") ?? "?")-byte body, same listener)")
        for run in decryptRuns + ["tracing"] where r.runs[run] != nil {
            var text = "\(Self.padded(run + ":", 12)) \(r.text(run, "rate") ?? "?") tokens/s = \(ratio(run, "engine")) of the engine"
            text += "  \(r.text(run, "cpu_us") ?? "?") µs CPU per request, \(difference(run, "engine")) over the engine"
            if run != "memory" { text += ", \(difference(run, "memory")) over memory" }
            Swift.print(text)
        }
        openLoop("half", what: "decrypt", unit: "tokens/s")
        for run in decryptRuns where run != "memory" && r.runs["register-\(run)"] != nil {
            Swift.print(closedLoop("register-\(run)", unit: "registrations/s") + "  \(ratio("register-\(run)", run)) of decrypt")
            Swift.print(closedLoop("redeem-\(run)", unit: "redemptions/s") + "  \(ratio("redeem-\(run)", run)) of decrypt")
            Swift.print(
                closedLoop("relay-\(run)", unit: "relayed auths/s") + "  \(ratio("relay-\(run)", run)) of decrypt, + "
                    + "\(r.text("relay-\(run)", "upstream_cpu_us") ?? "?") µs in the stand-in upstream")
        }
        openLoop("redeem-half", what: "redemption", unit: "redemptions/s")

        Swift.print("== goals (each figure against its baseline in this run)")
        for goal in Self.goals {
            let value = goal.figure.value(in: results)
            let (bound, met): (String, Bool?) =
                switch goal.bound {
                case .atLeast(let limit): (String(format: ">= %g", limit), value.map { $0 >= limit })
                case .atMost(let limit): (String(format: "<= %g", limit), value.map { $0 <= limit })
                }
            let verdict = met.map { $0 ? "met" : "MISSED" } ?? "not measured"
            Swift.print(
                "\(Self.padded(goal.name, 68)) \(Self.padded(value.map(Self.decimal) ?? "-", 9)) target \(Self.padded(bound, 8)) \(verdict)"
            )
        }
    }

    private func ratio(_ run: String, _ baseline: String, _ field: String = "rate") -> String {
        Figure.ratio(.field(run, field), .field(baseline, field)).value(in: results).map(Self.decimal) ?? "?"
    }

    private func difference(_ run: String, _ baseline: String) -> String {
        Figure.difference(.field(run, "cpu_us"), .field(baseline, "cpu_us")).value(in: results).map { String(format: "%.1f", $0) } ?? "?"
    }

    private func closedLoop(_ run: String, unit: String) -> String {
        let fields = results.runs[run] ?? [:]
        return
            "\(Self.padded(run + ":", 12)) \(fields["rate"] ?? "?") \(unit)  p50 \(fields["p50"] ?? "?") ms  p99 \(fields["p99"] ?? "?") ms"
            + "  errors \(fields["errors"] ?? "?")  \(fields["cpu_us"] ?? "?") µs CPU per request"
    }

    private func openLoop(_ prefix: String, what: String, unit: String) {
        let runs = results.series(prefix)
        guard let first = runs.first else { return }
        let p99 = Figure.median(prefix, "p99").value(in: results).map(Self.decimal) ?? "?"
        let errors = Int(runs.compactMap { results.number($0, "errors") }.reduce(0, +))
        Swift.print(
            "\(what) at half rate: median p99 \(p99) ms over \(runs.count) runs of \(results.text(first, "seconds") ?? "?") s"
                + " at \(results.text(first, "rate") ?? "?") \(unit), errors \(errors)")
    }

    private static func decimal(_ value: Double) -> String { String(format: "%.2f", value) }

    private static func padded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

/// `median`, for `LoadTestReport.Figure`, whose case of that name hides the function.
private func middle(_ values: [Double]) -> Double { median(values) }
