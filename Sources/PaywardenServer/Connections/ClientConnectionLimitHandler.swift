import Logging
import NIOCore

/// The first handler of a connection: counts it against its client's share
/// (``ConnectionsPerClient``) and closes it at once when the client is over it; gives the slot
/// back when the connection closes.
final class ClientConnectionLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let connections: ConnectionsPerClient
    private let logger: Logger
    private var admission: ConnectionsPerClient.Admission?

    init(connections: ConnectionsPerClient, logger: Logger) {
        self.connections = connections
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        // The handlers after this one hear of the connection before they hear of its close (a
        // close here runs their channelInactive at once).
        context.fireChannelActive()
        admit(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Nothing from a refused connection reaches HTTP.
        guard admission != .refused else { return }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
    }

    private func admit(_ context: ChannelHandlerContext) {
        guard admission == nil else { return }
        let admitted = connections.admit(context.channel.remoteAddress)
        admission = admitted
        if admitted == .refused {
            // Debug: a client over its limit could otherwise write the log as fast as it connects.
            logger.debug("connection refused: the client is at its connection limit", metadata: ["limit": "\(connections.limit)"])
            context.close(promise: nil)
        }
    }

    private func release() {
        if case .counted(let key) = admission { connections.closed(key) }
        admission = .refused
    }
}
