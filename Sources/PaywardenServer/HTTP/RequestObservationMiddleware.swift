import Foundation
import Hummingbird
import Logging
import PaywardenServices

/// Counts requests by route and status and logs each with its request id: method, route
/// template, status and duration. Hummingbird's LogRequestsMiddleware logs the URI, whose path can
/// carry a registration ID or a token, and its MetricsMiddleware reports through the process-wide
/// MetricsSystem rather than this service's registry; hence this one. An error that is not an HTTP
/// response (a bug, or a dependency's error) leaves as a typed 500 rather than Hummingbird's empty
/// one, and is logged by type only: its description could quote request data.
struct RequestObservationMiddleware: RouterMiddleware {
    typealias Context = PaywardenRequestContext

    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let result: Result<Response, any Error>
        do {
            result = .success(try await next(request, context))
        } catch let error as APIError {
            if let detail = error.detail {
                context.logger.warning("request failed", metadata: ["code": "\(error.code)", "detail": "\(detail)"])
            }
            result = .failure(error)
        } catch let error as any HTTPResponseError {
            result = .failure(error)
        } catch {
            context.logger.error("unexpected error", metadata: ["error_type": "\(String(reflecting: type(of: error)))"])
            result = .failure(APIError.internalError)
        }
        let status =
            switch result {
            case .success(let response): response.status.code
            case .failure(let error as any HTTPResponseError): error.status.code
            case .failure: 500
            }
        let route = context.endpointPath ?? "unmatched"
        let elapsed = ContinuousClock.now - start
        metrics.request(route: route, method: request.method.rawValue, status: status, duration: elapsed)
        let milliseconds = elapsed / .milliseconds(1)
        context.logger.info(
            "request",
            metadata: [
                "method": "\(request.method.rawValue)", "route": "\(route)", "status": "\(status)",
                "duration_ms": "\(String(format: "%.2f", milliseconds))",
            ])
        return try result.get()
    }
}
