import Hummingbird
import Tracing

/// One server span per request, named by the method and the route template
/// (`POST /v1/registrations/{id}/redeem`), never the path itself: paths carry registration IDs and
/// tokens. Hummingbird's TracingMiddleware records the raw path and query, hence this one. No
/// header, query or body is recorded, and an error is recorded by its status only (its description
/// could quote request data). A caller's W3C `traceparent` makes the span a child of the caller's.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = PaywardenRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        let method = request.method.rawValue
        let span = startSpan("\(method)", context: parent, ofKind: .server)
        defer { span.end() }
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

    private func finish(_ span: any Span, method: String, context: Context, status: Int) {
        if let route = context.endpointPath {
            span.operationName = "\(method) \(route)"
            span.attributes["http.route"] = route
        }
        span.attributes["http.response.status_code"] = status
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }
}
