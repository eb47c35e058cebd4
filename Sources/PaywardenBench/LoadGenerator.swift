import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// `paywarden-bench loadgen URL KEYFILE LINES RATE SECONDS`: an open-loop load generator. It
/// sends one POST every 1/RATE seconds, whatever the responses do, and measures each latency
/// from the moment the request was due, so a stalled server shows as latency rather than as a
/// politely slower client. Each line of LINES is a JSON body (a token, used once); when URL holds
/// `{line}`, each line goes there instead (a registration ID to redeem), with no body, and the
/// lines are reused round-robin, as a route that may be called repeatedly allows. With `--record
/// WORK RUN`, the figures are recorded as the load test's run RUN (LoadTestResults).
enum LoadGenerator {
    static func run(_ arguments: [String]) async throws {
        var arguments = arguments
        var record: (work: String, run: String)?
        if arguments.count == 8, arguments[5] == "--record" {
            record = (arguments[6], arguments[7])
            arguments.removeLast(3)
        }
        guard arguments.count == 5, let rate = Double(arguments[3]), let seconds = Double(arguments[4]) else {
            throw BenchError("usage: paywarden-bench loadgen URL KEYFILE LINES RATE SECONDS [--record WORK RUN]")
        }
        let url = arguments[0]
        let key = try String(contentsOfFile: arguments[1], encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let lines = try String(contentsOfFile: arguments[2], encoding: .utf8).split(separator: "\n").map(String.init)
        let inURL = url.contains("{line}")
        let total = inURL ? (lines.isEmpty ? 0 : Int(rate * seconds)) : min(lines.count, Int(rate * seconds))
        guard total > 0 else { throw BenchError("no lines in \(arguments[2])") }
        if total < Int(rate * seconds) {
            print(String(format: "warning: %d lines cover only %.1f s at %.0f/s; the run is that short", total, Double(total) / rate, rate))
        }
        let unit = inURL ? "requests/s" : "tokens/s"

        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let results = Results()
        let clock = ContinuousClock()
        let start = clock.now
        let interval = Duration.nanoseconds(Int64(1e9 / rate))

        try await withThrowingDiscardingTaskGroup { group in
            for index in 0..<total {
                let due = start + interval * index
                try await clock.sleep(until: due)
                group.addTask {
                    let lag = clock.now - due
                    results.lags.withLock { $0.append(lag / .milliseconds(1)) }
                    let line = lines[index % lines.count]
                    var request = HTTPClientRequest(url: inURL ? url.replacingOccurrences(of: "{line}", with: line) : url)
                    request.method = .POST
                    request.headers.add(name: "Authorization", value: "Bearer \(key)")
                    if !inURL {
                        request.headers.add(name: "Content-Type", value: "application/json")
                        request.body = .bytes(ByteBuffer(string: line))
                    }
                    var status = 0
                    do {
                        let response = try await client.execute(request, timeout: .seconds(30))
                        _ = try await response.body.collect(upTo: 1 << 20)
                        status = Int(response.status.code)
                    } catch {
                        status = -1
                    }
                    let elapsed = clock.now - due
                    let milliseconds = elapsed / .milliseconds(1)
                    results.latencies.withLock { $0.append(milliseconds) }
                    if status != 200 { results.errors.withLock { $0[status, default: 0] += 1 } }
                }
            }
        }
        let elapsed = clock.now - start
        try await client.shutdown()

        let sorted = results.latencies.withLock { $0 }.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        let wall = elapsed / .seconds(1)
        let failed = results.errors.withLock { $0 }
        let lags = results.lags.withLock { $0 }.sorted()
        print(
            String(
                format: "generator send lag: p50 %.2f ms, p99 %.2f ms", lags[lags.count / 2],
                lags[min(lags.count - 1, Int(Double(lags.count) * 0.99))]))
        print(
            String(
                format:
                    "open loop at %.0f %@ for %.1f s: %d requests, %.0f done/s, p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f "
                    + "ms, errors %d %@",
                rate, unit, wall, sorted.count, Double(sorted.count) / wall, percentile(0.5), percentile(0.9), percentile(0.99),
                sorted.last ?? 0, failed.values.reduce(0, +), failed.isEmpty ? "" : "\(failed)"))
        if let record {
            let figures = ["p50": percentile(0.5), "p90": percentile(0.9), "p99": percentile(0.99)].mapValues { String(format: "%.2f", $0) }
            try LoadTestResults.record(
                record.run,
                figures.merging([
                    "rate": String(Int(rate)), "seconds": String(format: "%.1f", wall), "errors": String(failed.values.reduce(0, +)),
                ]) { $1 },
                work: record.work)
        }
    }
}

private final class Results: Sendable {
    let latencies = Mutex<[Double]>([])
    let errors = Mutex<[Int: Int]>([:])
    let lags = Mutex<[Double]>([])
}
