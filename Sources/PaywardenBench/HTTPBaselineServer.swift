import Foundation
import Logging
import PaywardenConfiguration
@_spi(Benchmarks) import PaywardenServer
import ServiceLifecycle

/// `paywarden-bench http-baseline BYTES`: the HTTP floor `make loadtest` measures beside the
/// decrypt route. The API listener `paywarden serve` would build from the same environment
/// (address, TLS, idle timeout, connection cap, body limit, event loops) answers every POST with
/// a fixed JSON body of BYTES bytes, the size of a decrypt response, until SIGTERM or SIGINT.
enum HTTPBaselineServer {
    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 1, let bytes = Int(arguments[0]), bytes >= 16 else {
            throw BenchError("usage: paywarden-bench http-baseline RESPONSE_BYTES (at least 16)")
        }
        let configuration = try ServerConfiguration(settings: await PaywardenSettings.load())
        var logger = Logger(label: "paywarden-http-baseline")
        logger.logLevel = .warning
        let body = Array(#"{"padding":""#.utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: bytes - 14) + Array(#""}"#.utf8)
        let server = try PaywardenServer.httpBaseline(configuration: configuration, responseBody: body, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
