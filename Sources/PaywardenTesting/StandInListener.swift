import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// The listening half of a stand-in server: HTTP, or HTTPS with `sslContext`, on 127.0.0.1, every
/// connection answered by a ``StandInHTTPHandler`` with `respond`. It can go down (``stop()``) and
/// come back on the same port (``restart()``), and is closed when the test's resources are.
final class StandInListener: Sendable {
    typealias Respond =
        @Sendable (_ head: HTTPRequestHead, _ body: [UInt8], _ context: ChannelHandlerContext) -> (StandInResponse, Duration)

    private let sslContext: NIOSSLContext?
    /// Whether a client certificate (the leaf's DER) is accepted, for a listener that requires one
    /// and decides by itself which it trusts (in place of the context's CA check).
    private let acceptsClientCertificate: (@Sendable ([UInt8]) -> Bool)?
    private let respond: Respond
    private let state = Mutex<State>(State())

    private struct State: Sendable {
        var port = 0
        var server: Channel?
        var connections: [ObjectIdentifier: Channel] = [:]
    }

    private init(sslContext: NIOSSLContext?, acceptsClientCertificate: (@Sendable ([UInt8]) -> Bool)?, respond: @escaping Respond) {
        self.sslContext = sslContext
        self.acceptsClientCertificate = acceptsClientCertificate
        self.respond = respond
    }

    /// Listens on `port`, a free one when 0.
    static func start(
        port: Int = 0, sslContext: NIOSSLContext?, acceptsClientCertificate: (@Sendable ([UInt8]) -> Bool)? = nil,
        respond: @escaping Respond
    ) async throws -> StandInListener {
        let listener = StandInListener(sslContext: sslContext, acceptsClientCertificate: acceptsClientCertificate, respond: respond)
        let channel = try await listener.bind(port: port)
        listener.state.withLock {
            $0.server = channel
            $0.port = channel.localAddress?.port ?? 0
        }
        TestResources.track(cleanup: { [listener] in listener.closeAll() })
        return listener
    }

    var port: Int { state.withLock { $0.port } }

    /// Stops listening and drops every open connection: the peer is down.
    func stop() async throws {
        let (server, connections) = state.withLock { state in
            defer {
                state.server = nil
                state.connections = [:]
            }
            return (state.server, Array(state.connections.values))
        }
        for connection in connections { try? await connection.close() }
        try await server?.close()
    }

    /// Listens again on the same port.
    func restart() async throws {
        let channel = try await bind(port: port)
        state.withLock { $0.server = channel }
    }

    /// Closes every open connection and keeps listening.
    func closeConnections() {
        let connections = state.withLock { Array($0.connections.values) }
        for connection in connections { connection.close(promise: nil) }
    }

    /// For the test-resource cleanup: closes without waiting.
    func closeAll() {
        let channels = state.withLock { state in
            defer {
                state.server = nil
                state.connections = [:]
            }
            return Array(state.connections.values) + (state.server.map { [$0] } ?? [])
        }
        for channel in channels { channel.close(promise: nil) }
    }

    private func bind(port: Int) async throws -> Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext { try channel.pipeline.syncOperations.addHandler(tlsHandler(sslContext)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(StandInHTTPHandler(respond: respond))
                    track(channel)
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
    }

    private func tlsHandler(_ context: NIOSSLContext) -> NIOSSLServerHandler {
        guard let acceptsClientCertificate else { return NIOSSLServerHandler(context: context) }
        return NIOSSLServerHandler(context: context) { certificates, promise in
            let leaf = (try? certificates.first?.toDERBytes()) ?? nil
            promise.succeed(leaf.map(acceptsClientCertificate) == true ? .certificateVerified : .failed)
        }
    }

    private func track(_ channel: Channel) {
        let id = ObjectIdentifier(channel)
        state.withLock { $0.connections[id] = channel }
        channel.closeFuture.whenComplete { [self] _ in state.withLock { _ = $0.connections.removeValue(forKey: id) } }
    }
}
