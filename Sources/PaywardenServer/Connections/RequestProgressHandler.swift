import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Where a connection's requests are, after HTTP decoding: tells ``RequestReadDeadlineHandler``
/// when a request has arrived whole and when a response is being written, and ends a kept-alive
/// connection after `maxRequests` requests, or after each response while `closing` says the
/// service is draining before it stops (the response says `Connection: close`).
final class RequestProgressHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let maxRequests: Int
    private let closing: @Sendable () -> Bool
    private var responses = 0
    /// Decided when the response's head is written, which said `Connection: close`.
    private var closeAfterResponse = false
    private var deadline: RequestReadDeadlineHandler?

    init(maxRequests: Int, closing: @escaping @Sendable () -> Bool = { false }) {
        self.maxRequests = maxRequests
        self.closing = closing
    }

    func handlerAdded(context: ChannelHandlerContext) {
        deadline = try? context.pipeline.syncOperations.handler(type: RequestReadDeadlineHandler.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) { deadline?.requestEnded() }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            deadline?.responseStarted()
            guard responses + 1 >= maxRequests || closing() else {
                context.write(data, promise: promise)
                return
            }
            closeAfterResponse = true
            head.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            responses += 1
            deadline?.responseEnded()
            guard closeAfterResponse else {
                context.write(data, promise: promise)
                return
            }
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: written)
            written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }
}
