import Foundation
import PaywardenTesting

/// `paywarden-bench upstream DIR`: the processor's authorization engine for `make loadtest`'s
/// relay run, the stand-in the relay tests use (it parses each request strictly and answers an
/// approval, or a schema error when card data is missing or a registration ID or token got
/// through). HTTPS on loopback requiring a client certificate, as a processor's engine does.
/// Writes DIR/upstream-url, DIR/upstream-ca.pem and a client identity (DIR/upstream-client.pem,
/// DIR/upstream-client.key); serves until SIGTERM or SIGINT, then prints how many it answered.
enum UpstreamStandIn {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 1 else { throw BenchError("usage: paywarden-bench upstream DIR") }
        let directory = arguments[0]
        let upstream = try await ProcessorUpstreamStandIn.start(tls: true, requireClientCertificate: true)
        upstream.keepRequests(false)
        let ca = try upstream.writeServerCA(to: directory)
        let identity = try upstream.writeClientIdentity(to: directory)
        let files = FileManager.default
        for (from, to) in [(ca, "upstream-ca.pem"), (identity.certificate, "upstream-client.pem"), (identity.key, "upstream-client.key")] {
            try? files.removeItem(atPath: directory + "/" + to)
            try files.moveItem(atPath: from, toPath: directory + "/" + to)
        }
        try upstream.baseURL.absoluteString.write(toFile: directory + "/upstream-url", atomically: true, encoding: .utf8)
        await StandInSignals.waitForTermination()
        print("upstream stand-in answered \(upstream.answeredCount) requests")
        try await upstream.stop()
    }
}
