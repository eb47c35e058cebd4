import Foundation
import Hummingbird
import Logging

/// Counts requests by route and status and logs each one with its request id: method, route,
/// status and duration. Never headers or bodies.
struct RequestObservationMiddleware: RouterMiddleware {
    typealias Context = PaywardenRequestContext

    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let status: Int
        let response: Response?
        var failure: (any Error)?
        do {
            let result = try await next(request, context)
            status = result.status.code
            response = result
        } catch let error as any HTTPResponseError {
            status = error.status.code
            response = nil
            failure = error
        } catch {
            status = 500
            response = nil
            failure = error
        }
        let route = context.endpointPath ?? "unmatched"
        metrics.request(route: route, status: status)
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        context.logger.info("request", metadata: [
            "method": "\(request.method.rawValue)", "route": "\(route)", "status": "\(status)",
            "duration_ms": "\(String(format: "%.2f", milliseconds))",
        ])
        if let failure { throw failure }
        return response!
    }
}
