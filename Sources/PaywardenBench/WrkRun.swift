import AsyncHTTPClient
import Foundation
import NIOCore

/// `paywarden-bench loadtest-wrk WORK RUN URL MODE LINES STOP [--pid PID]… [--upstream-pid PID]
/// [--server] [NAME=VALUE]…`: one closed-loop run of `make loadtest`. It runs wrk (2 threads,
/// LOADTEST_CONNECTIONS connections, default 16) with scripts/loadtest.lua in MODE over the
/// per-thread halves of LINES against URL, its report in WORK/wrk-RUN.txt, and records the run
/// (LoadTestResults): wrk's LOADTEST line (rate, latency, errors, bytes), and the CPU of the
/// processes PID (with their children) per request answered, from /proc.
///
/// STOP says when the run is over: `--route ROUTE` (the modes that send each line once: wrk runs
/// for its whole duration, so it is stopped, SIGINT so that it reports, once the server's count of
/// answers on ROUTE stops moving), `--idle` (the same, by the CPU of the PIDs, for a peer that
/// keeps no count), or `--seconds S` (the modes that repeat their lines: wrk's own duration).
/// `--server`: PID is `paywarden serve` at URL, whose RSS, module recycles and HSM dispatch are
/// recorded too. `--upstream-pid`: a stand-in upstream on the same cores, its CPU per request
/// recorded as `upstream_cpu_us`. NAME=VALUE: environment for the wrk script (its key, its user).
/// LOADTEST_PERF=PREFIX records a `perf` profile of the first PID for 5 s into PREFIX-RUN.
struct WrkRun {
    enum Stop {
        case answersOnRoute(String)
        case idleProcesses
        case seconds(Int)
    }

    static let usage =
        "usage: paywarden-bench loadtest-wrk WORK RUN URL MODE LINES (--route ROUTE | --idle | --seconds S) [--pid PID]…"
        + " [--upstream-pid PID] [--server] [NAME=VALUE]…"
    /// What a request the mode counts is called in wrk's LOADTEST line.
    static let counted = [
        "decrypt": "decrypted", "register": "registered", "redeem": "redeemed", "relay": "relayed", "baseline": "answered",
    ]

    let work: String
    let run: String
    let url: String
    let mode: String
    let lines: String
    var stop = Stop.seconds(10)
    var pids: [Int32] = []
    var upstreamPID: Int32?
    var isServer = false
    var scriptEnvironment: [String: String] = [:]

    init(_ arguments: [String]) throws {
        guard arguments.count >= 6, Self.counted[arguments[3]] != nil else { throw BenchError(Self.usage) }
        (work, run, url, mode, lines) = (arguments[0], arguments[1], arguments[2], arguments[3], arguments[4])
        var rest = arguments.dropFirst(5)[...]
        func next() throws -> String {
            guard let value = rest.popFirst() else { throw BenchError(Self.usage) }
            return value
        }
        func pid() throws -> Int32 {
            guard let pid = Int32(try next()) else { throw BenchError(Self.usage) }
            return pid
        }
        while let word = rest.popFirst() {
            switch word {
            case "--route": stop = .answersOnRoute(try next())
            case "--idle": stop = .idleProcesses
            case "--seconds":
                guard let seconds = Int(try next()) else { throw BenchError(Self.usage) }
                stop = .seconds(seconds)
            case "--pid": pids.append(try pid())
            case "--upstream-pid": upstreamPID = try pid()
            case "--server": isServer = true
            default:
                let fields = LoadTestResults.fields(of: word)
                guard fields.count == 1 else { throw BenchError(Self.usage) }
                scriptEnvironment.merge(fields) { $1 }
            }
        }
        guard !pids.isEmpty else { throw BenchError("loadtest-wrk: no --pid, so no CPU per request") }
    }

    static func run(_ arguments: [String]) async throws {
        try await WrkRun(arguments).measure()
    }

    func measure() async throws {
        let environment = ProcessInfo.processInfo.environment
        let processes = ProcessCPU.withChildren(pids)
        var fields: [String: String] = [:]
        if isServer { fields["rss_before"] = ProcessCPU.residentKilobytes(pids[0]).map(String.init) }
        let cpuBefore = ProcessCPU.ticks(processes)
        let upstreamBefore = upstreamPID.map { ProcessCPU.ticks([$0]) }

        let reportPath = "\(work)/wrk-\(run).txt"
        _ = FileManager.default.createFile(atPath: reportPath, contents: nil)
        let report = try FileHandle(forWritingTo: URL(fileURLWithPath: reportPath))
        let seconds = if case .seconds(let seconds) = stop { seconds } else { 3600 }
        var wrk = try SpawnedProcess(
            [
                "wrk", "-t2", "-c\(environment["LOADTEST_CONNECTIONS"] ?? "16")", "-d\(seconds)s", "--timeout", "10s", "--latency",
                "-s", "scripts/loadtest.lua", url,
            ],
            environment: environment.merging(scriptEnvironment) { $1 }.merging(
                ["PAYWARDEN_LOADTEST_MODE": mode, "PAYWARDEN_LOADTEST_LINES": lines]) { $1 },
            output: report.fileDescriptor)
        if let prefix = environment["LOADTEST_PERF"] { try profile(pids[0], into: "\(prefix)-\(run)") }

        do {
            try await waitForTheEnd(of: &wrk, processes: processes)
        } catch {
            if wrk.isRunning() { wrk.signal(SIGKILL) }
            throw error
        }
        // Only while it runs: once reaped, its PID may be another process's.
        if wrk.isRunning() { wrk.signal(SIGINT) }
        while wrk.isRunning() { try await Task.sleep(for: .milliseconds(50)) }
        try report.close()

        guard ProcessCPU.isRunning(pids[0]) else { throw BenchError("the process measured by \(run) stopped during the run") }
        let output = try String(contentsOfFile: reportPath, encoding: .utf8)
        // wrk's script reports its first failures: on stderr, for whoever runs the load test to see why.
        for failure in output.split(separator: "\n") where failure.hasPrefix("FAILED") {
            FileHandle.standardError.write(Data("\(failure)\n".utf8))
        }
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("LOADTEST ") }) else {
            FileHandle.standardError.write(Data(output.utf8))
            throw BenchError("wrk reported nothing for \(run)")
        }
        fields.merge(LoadTestResults.fields(of: line)) { $1 }
        let answered = Double(fields[Self.counted[mode]!] ?? "") ?? 0
        fields["cpu_us"] = ProcessCPU.microsecondsPerRequest(from: cpuBefore, to: ProcessCPU.ticks(processes), requests: answered)
        if let upstreamPID, let upstreamBefore {
            fields["upstream_cpu_us"] = ProcessCPU.microsecondsPerRequest(
                from: upstreamBefore, to: ProcessCPU.ticks([upstreamPID]), requests: answered)
        }
        if isServer {
            fields["rss_after"] = ProcessCPU.residentKilobytes(pids[0]).map(String.init)
            let metrics = try await ServerMetricsText.read(from: url)
            fields["recycles"] = metrics.value("paywarden_hsm_module_recycles_total").map { String(Int($0)) }
            fields["dispatch"] = metrics.label("mode", ofSeriesSetToOne: "paywarden_hsm_dispatch")
        }
        print(
            line.dropFirst("LOADTEST ".count)
                + fields.filter { !line.contains("\($0.key)=") }.sorted { $0.key < $1.key }
                .map { " \($0.key)=\($0.value)" }.joined())
        try LoadTestResults.record(run, fields, work: work)
    }

    /// Returns once the run is over by its STOP rule, or wrk ended by itself.
    private func waitForTheEnd(of wrk: inout SpawnedProcess, processes: [Int32]) async throws {
        var last = -1
        var unchanged = 0
        var waited = 0
        while wrk.isRunning(), unchanged < 2 {
            switch stop {
            case .seconds:
                try await Task.sleep(for: .milliseconds(200))
                continue
            case .answersOnRoute(let route):
                try await Task.sleep(for: .seconds(1))
                let now = try await ServerMetricsText.read(from: url).answers(on: route)
                unchanged = now == last && now > 0 ? unchanged + 1 : 0
                last = now
                waited += 1
                // Nothing answered for so long is a broken run (or a route the metrics name otherwise), not a slow one.
                if now == 0, waited >= 60 {
                    throw BenchError("no answers on \(route) after 60 s")
                }
            case .idleProcesses:
                try await Task.sleep(for: .seconds(1))
                let now = ProcessCPU.ticks(processes)
                unchanged = last >= 0 && now - last <= 2 ? unchanged + 1 : 0
                last = now
            }
        }
    }

    private func profile(_ pid: Int32, into path: String) throws {
        let perf = Process()
        perf.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        perf.arguments = ["perf", "record", "-F", "999", "-g", "-p", String(pid), "-o", path, "--", "sleep", "5"]
        perf.standardOutput = FileHandle.nullDevice
        perf.standardError = FileHandle.nullDevice
        try perf.run()
    }
}

/// `paywarden serve`'s /metrics as text, and the few series the load test reads from it.
struct ServerMetricsText {
    let text: String

    static func read(from serverURL: String) async throws -> ServerMetricsText {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: serverURL + "/metrics"), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 16 << 20)
        return ServerMetricsText(text: String(buffer: body))
    }

    private var samples: [(series: Substring, value: Double)] {
        text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...])
            else { return nil }
            return (line[..<space], value)
        }
    }

    /// The unlabelled series `name`.
    func value(_ name: String) -> Double? { samples.first { $0.series == name }?.value }

    /// The requests the server answered on `route`, refusals included.
    func answers(on route: String) -> Int {
        Int(
            samples.filter { $0.series.hasPrefix("paywarden_http_requests_total{") && $0.series.contains("route=\"\(route)\"") }
                .reduce(0) { $0 + $1.value })
    }

    /// The label `label` of the series of `name` whose value is 1 (an enumeration as a gauge).
    func label(_ label: String, ofSeriesSetToOne name: String) -> String? {
        guard let series = samples.first(where: { $0.series.hasPrefix(name + "{") && $0.value == 1 })?.series,
            let start = series.range(of: "\(label)=\"")?.upperBound
        else { return nil }
        return String(series[start...].prefix { $0 != "\"" })
    }
}
