import Foundation
import PaywardenTesting

/// `paywarden-bench collector DIR`: an OpenTelemetry collector for `make loadtest`'s tracing run,
/// the stand-in the tracing test uses (OTLP/HTTP on loopback), counting what it receives rather
/// than keeping it. Writes its traces URL to DIR/collector-url; serves until SIGTERM or SIGINT,
/// then prints the export requests and bytes it received.
enum CollectorStandIn {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 1 else { throw BenchError("usage: paywarden-bench collector DIR") }
        let collector = try await OTLPCollectorStandIn.start(keepingBodies: false)
        try collector.tracesURL.write(toFile: arguments[0] + "/collector-url", atomically: true, encoding: .utf8)
        await StandInSignals.waitForTermination()
        let received = collector.receivedCount
        print("collector stand-in received \(received.requests) export requests, \(received.bytes) bytes")
    }
}

/// Waiting for SIGTERM or SIGINT, for the stand-ins the load test starts and stops.
enum StandInSignals {
    static func waitForTermination() async {
        let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
        let sources = [SIGTERM, SIGINT].map { signal in
            Foundation.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal)
            source.setEventHandler { continuation.yield(signal) }
            source.resume()
            return source
        }
        for await _ in signals { break }
        for source in sources { source.cancel() }
    }
}
