import NIOCore
import NIOHTTP1

/// One connection's HTTP for a stand-in server: collects a request (bodies capped at 1 MiB),
/// asks `respond` for the answer and how long to wait before it (or the gate it waits for), and
/// writes it. A status of 0
/// drops the connection instead (a peer that fails mid-exchange).
final class StandInHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    typealias Respond = StandInListener.Respond

    private let respond: Respond
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(respond: @escaping Respond) {
        self.respond = respond
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(let buffer):
            if body.count < 1 << 20 { body += Array(buffer.readableBytesView) }
        case .end:
            guard let head else { return }
            self.head = nil
            let (response, delay) = respond(head, body, context)
            if let gate = response.gate {
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                let eventLoop = context.eventLoop
                gate.hold { eventLoop.execute { bound.value.0.write(response, for: head, context: bound.value.1) } }
                return
            }
            guard delay > .zero else {
                write(response, for: head, context: context)
                return
            }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: TimeAmount(delay)) {
                bound.value.0.write(response, for: head, context: bound.value.1)
            }
        }
    }

    private func write(_ response: StandInResponse, for request: HTTPRequestHead, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        guard response.status != 0 else {
            context.close(promise: nil)
            return
        }
        var headers = HTTPHeaders()
        for (name, value) in response.headers { headers.add(name: name, value: value) }
        if response.status != 204 && response.status != 304 {
            headers.replaceOrAdd(name: "Content-Length", value: "\(response.body.count)")
        }
        let keepAlive = request.isKeepAlive
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !response.body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: response.body)))), promise: nil) }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            written.whenComplete { _ in bound.value.close(promise: nil) }
        }
    }
}
