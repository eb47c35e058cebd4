import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

extension PaywardenServer {
    /// The HTTP floor of this stack, for `make loadtest`: the API listener exactly as `serve`
    /// builds it (server, TLS, idle timeout, connection cap, body limit, and the event loops the
    /// caller installed) answering every POST to any path with `responseBody` once the request
    /// body is read, with no middleware, authentication, HSM or database. Its CPU per request is
    /// what the framework costs; the decrypt route's, less the engine's, is what Paywarden adds.
    @_spi(Benchmarks)
    public static func httpBaseline(
        configuration: ServerConfiguration, responseBody: [UInt8], logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> any Service {
        let router = Router(context: PaywardenRequestContext.self)
        let body = ByteBuffer(bytes: responseBody)
        let limit = configuration.maxBodyBytes
        router.post("**") { request, _ -> Response in
            _ = try await RequestBody.collect(request, limit: limit)
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
        }
        return try application(
            router: router, address: configuration.listen, tls: configuration.tls, configuration: configuration, services: [],
            onRunning: onListening, logger: logger)
    }
}
