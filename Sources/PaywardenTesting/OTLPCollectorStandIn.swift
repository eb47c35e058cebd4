import NIOCore
import NIOHTTP1
import Synchronization

/// A stand-in OpenTelemetry collector: OTLP/HTTP on 127.0.0.1, accepting `POST /v1/traces` with
/// `application/x-protobuf` bodies, answering 200 with an empty `ExportTraceServiceResponse`, and
/// keeping every body as received (for searching every exported byte) and its spans decoded
/// (``ExportedSpan``).
public final class OTLPCollectorStandIn: Sendable {
    private let bodies = Mutex<[[UInt8]]>([])
    private let listener = Mutex<StandInListener?>(nil)
    private let received = Mutex<(requests: Int, bytes: Int)>((0, 0))
    private let keepsBodies: Bool

    private init(keepsBodies: Bool) {
        self.keepsBodies = keepsBodies
    }

    /// - Parameter keepingBodies: false counts requests and bytes only (a load test's collector).
    public static func start(keepingBodies: Bool = true) async throws -> OTLPCollectorStandIn {
        let collector = OTLPCollectorStandIn(keepsBodies: keepingBodies)
        let listener = try await StandInListener.start(sslContext: nil) { head, body, _ in
            guard head.method == .POST, head.uri == "/v1/traces" else { return (StandInResponse(status: 404), .zero) }
            guard head.headers["Content-Type"].first?.lowercased().hasPrefix("application/x-protobuf") == true else {
                return (StandInResponse(status: 415), .zero)
            }
            collector.received.withLock { $0 = ($0.requests + 1, $0.bytes + body.count) }
            if collector.keepsBodies { collector.bodies.withLock { $0.append(body) } }
            return (StandInResponse(status: 200, headers: [("Content-Type", "application/x-protobuf")]), .zero)
        }
        collector.listener.withLock { $0 = listener }
        return collector
    }

    /// The traces URL to export to.
    public var tracesURL: String { "http://127.0.0.1:\(listener.withLock { $0?.port ?? 0 })/v1/traces" }

    /// How many export requests arrived, and their bytes.
    public var receivedCount: (requests: Int, bytes: Int) { received.withLock { $0 } }

    /// Every request body received, as sent (none when not keeping them).
    public var receivedBodies: [[UInt8]] { bodies.withLock { $0 } }

    /// Every span received so far, decoded.
    public func spans() throws -> [ExportedSpan] {
        try receivedBodies.flatMap { try ExportedSpan.decode(exportTraceServiceRequest: $0) }
    }

    /// Waits until `satisfied` holds for the spans received, or `timeout` passes; returns them.
    public func waitForSpans(
        timeout: Duration = .seconds(20), until satisfied: ([ExportedSpan]) -> Bool
    ) async throws -> [ExportedSpan] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let spans = try spans()
            if satisfied(spans) || ContinuousClock.now >= deadline { return spans }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
