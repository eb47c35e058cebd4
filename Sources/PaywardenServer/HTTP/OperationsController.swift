import Foundation
import Hummingbird
import NIOCore
import PaywardenServices

/// `/healthz` (the process answers), `/readyz` (ready to serve, or why not) and `/metrics`.
struct OperationsController {
    let readiness: @Sendable () -> Readiness
    let metrics: ServerMetrics

    struct Health: ResponseEncodable {
        let status = "ok"
    }

    func health(_ request: Request, context: PaywardenRequestContext) -> Health {
        Health()
    }

    func readiness(_ request: Request, context: PaywardenRequestContext) -> EditedResponse<Readiness> {
        let readiness = readiness()
        return EditedResponse(status: readiness.ready ? .ok : .serviceUnavailable, response: readiness)
    }

    func metrics(_ request: Request, context: PaywardenRequestContext) -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
    }
}

extension Readiness: ResponseEncodable {}

extension OperationsController {
    /// `/healthz`, `/readyz` and `/metrics`: no key, on the operations listener or the API's.
    var routes: RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.get("/healthz", use: health)
        routes.get("/readyz", use: readiness)
        routes.get("/metrics", use: metrics)
        return routes
    }
}
