import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// Hummingbird's HTTP/1.1 channel with the rules a service facing anonymous clients needs and
/// the channel leaves out: each request must arrive whole within the read timeout (the idle timer
/// restarts with every byte, so a trickled body never trips it), a connection carries a bounded
/// number of requests, and one client address holds a bounded share of the connections.
///
/// In the pipeline, after TLS when there is TLS: the per-client count, then the read deadline on
/// the bytes as they arrive (before HTTP decoding, so slow headers count too), then Hummingbird's
/// HTTP handlers with ``RequestProgressHandler`` among them.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let base: HTTP1Channel
    let readTimeout: TimeAmount
    let connections: ConnectionsPerClient

    init(responder: @escaping HTTPChannelHandler.Responder, rules: ConnectionRules) {
        let maxRequests = rules.maxRequestsPerConnection
        let closing = rules.closingConnections
        // An autoclosure: each connection gets a handler of its own.
        base = HTTP1Channel(
            responder: responder,
            configuration: .init(
                additionalChannelHandlers: [RequestProgressHandler(maxRequests: maxRequests, closing: closing)],
                idleTimeout: rules.idleTimeout))
        readTimeout = rules.readTimeout
        connections = rules.connections
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(ClientConnectionLimitHandler(connections: connections, logger: logger))
            try channel.pipeline.syncOperations.addHandler(RequestReadDeadlineHandler(timeout: readTimeout))
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// The connection rules of one listener (``GuardedHTTP1Channel``).
struct ConnectionRules: Sendable {
    let idleTimeout: TimeAmount
    let readTimeout: TimeAmount
    let maxRequestsPerConnection: Int
    /// True while the service drains before it stops: every response then closes its connection.
    let closingConnections: @Sendable () -> Bool
    let connections: ConnectionsPerClient
}
