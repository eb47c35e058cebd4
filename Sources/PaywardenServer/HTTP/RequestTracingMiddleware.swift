import HTTPTypes
import Hummingbird
import PaywardenServices
import Tracing

/// One server span per request, named by the method and the route template
/// (`POST /v1/registrations/{id}/redeem`), never the path itself: paths carry registration IDs and
/// tokens. Hummingbird's TracingMiddleware records the raw path and query, hence this one. No
/// header, query or body is recorded, and an error is recorded by its status only (its description
/// could quote request data).
///
/// A caller's W3C `traceparent` makes the span a child of the caller's only when the connection
/// comes from `PAYWARDEN_TRACE_CONTEXT_FROM` (the peer's own address, a gateway or proxy of the
/// operator's; never a forwarded one). Anyone else's request starts a trace of its own, sampled by
/// Paywarden's rules: a stranger cannot switch recording off, choose the `trace_id` of its log
/// lines, or join its requests to a trace of its choosing; its context is kept as a span link
/// only. No caller's `tracestate` is ever taken (``HTTPFieldsExtractor``), so none reaches Apple
/// or a processor under Paywarden's identity.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = PaywardenRequestContext

    /// Where a `traceparent` is believed from, by the connection's peer address.
    let trustedCallers: [IPAddressBlock]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        var link: ServiceContext?
        if request.headers[Self.traceparent] != nil {
            if believes(context) {
                InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
            } else {
                var callers = ServiceContext.topLevel
                InstrumentationSystem.instrument.extract(request.headers, into: &callers, using: HTTPFieldsExtractor())
                link = callers
            }
        }
        let method = request.method.rawValue
        let span = startSpan("\(method)", context: parent, ofKind: .server)
        defer { span.end() }
        // A context the instrument could not read is no link: the exporter leaves it out.
        if let link { span.addLink(SpanLink(context: link, attributes: [:])) }
        span.attributes["http.request.method"] = method
        do {
            let response = try await ServiceContext.withValue(span.context) { try await next(request, context) }
            finish(span, method: method, context: context, status: Int(response.status.code))
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            finish(span, method: method, context: context, status: Int(status))
            throw error
        }
    }

    private static let traceparent = HTTPField.Name("traceparent")!

    private func believes(_ context: Context) -> Bool {
        guard !trustedCallers.isEmpty, let peer = IPAddressBlock.addressBytes(context.remoteAddress) else { return false }
        return trustedCallers.contains { $0.contains(peer) }
    }

    private func finish(_ span: any Span, method: String, context: Context, status: Int) {
        if let route = context.endpointPath {
            span.operationName = "\(method) \(route)"
            span.attributes["http.route"] = route
        }
        span.attributes["http.response.status_code"] = status
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }
}
