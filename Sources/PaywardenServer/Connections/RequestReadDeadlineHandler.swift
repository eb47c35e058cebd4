import NIOCore

/// From the first byte of a request until ``RequestProgressHandler`` reports its end, a fixed
/// time: the request must arrive whole within it, headers and body, or it is answered 408 with
/// `Connection: close` and the connection is closed. Unlike the idle timer it does not restart
/// when a byte arrives, so a client trickling a byte a second cannot hold the connection.
///
/// It sits before HTTP decoding (it sees bytes, so slow headers count) and writes its 408 as
/// bytes: the application has not answered the request (or the connection is only closed), so
/// nothing else is writing to it.
final class RequestReadDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    /// A request's bytes have arrived and its end has not been decoded.
    private var reading = false
    /// A response is being written: a 408 now would cut into it, so expiry only closes.
    private var responding = false
    /// Requests read whole whose responses have not ended. A pipelined request behind them is
    /// held by the HTTP handlers, unread, until they are answered: its time does not run meanwhile.
    private var awaitingResponses = 0
    /// Responses that ended before their request did (a 401 or 413 answered before the body was
    /// read, which Hummingbird then drains): the request's end pairs with its response, not with
    /// one still to come.
    private var answeredEarly = 0

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !reading {
            reading = true
            schedule(context)
        }
        context.fireChannelRead(data)
    }

    private func schedule(_ context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self] in
            self?.expire(loopBound.value)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancel()
    }

    /// The decoder has the whole request.
    func requestEnded() {
        reading = false
        if answeredEarly > 0 {
            answeredEarly -= 1
        } else {
            awaitingResponses += 1
        }
        cancel()
    }

    func responseStarted() { responding = true }

    func responseEnded() {
        responding = false
        if awaitingResponses > 0 {
            awaitingResponses -= 1
        } else {
            answeredEarly += 1
        }
    }

    private func cancel() {
        deadline?.cancel()
        deadline = nil
    }

    private func expire(_ context: ChannelHandlerContext) {
        deadline = nil
        guard reading, context.channel.isActive else { return }
        guard awaitingResponses == 0 else {
            // The bytes are a pipelined request the HTTP handlers hold until the ones before it are
            // answered: its time starts again then.
            schedule(context)
            return
        }
        guard !responding else {
            context.close(promise: nil)
            return
        }
        let seconds = timeout.nanoseconds / 1_000_000_000
        let body = #"{"error":{"code":"request_timeout","message":"the request did not arrive whole within "# + "\(seconds) s\"}}"
        let head =
            "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: head + body))).assumeIsolated().whenComplete {
            _ in context.close(promise: nil)
        }
    }
}
