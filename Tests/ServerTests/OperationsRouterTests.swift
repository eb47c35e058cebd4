import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

@testable import PaywardenServer
@testable import PaywardenServices

/// `/healthz`, `/readyz` and `/metrics` on a router of their own, readiness from a stand-in:
/// no key needed, readiness answered 200 or 503 with its reason, every request counted by route.
struct OperationsRouterTests {
    static func readiness(_ ready: Bool) -> Readiness {
        Readiness(
            ready: ready, keys: ready ? 2 : 0, ecdhPath: "derive", rsaPath: "unwrap", database: "sqlite",
            reason: ready ? nil : "hsm_unavailable", cannotDecrypt: [], cannotRun: [])
    }

    @Test func healthReadinessAndMetricsAnswerWithoutAKey() async throws {
        let metrics = ServerMetrics()
        let ready = Mutex(true)
        let router = Router(context: PaywardenRequestContext.self)
        router.middlewares.add(RequestObservationMiddleware(metrics: metrics))
        let operations = OperationsController(readiness: { Self.readiness(ready.withLock { $0 }) }, metrics: metrics)
        router.get("/healthz", use: operations.health)
        router.get("/readyz", use: operations.readiness)
        router.get("/metrics", use: operations.metrics)
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok && String(buffer: response.body).contains(#""status":"ok""#))
            }
            try await client.execute(uri: "/readyz", method: .get) { response in
                let text = String(buffer: response.body)
                #expect(response.status == .ok && text.contains(#""ready":true"#) && text.contains(#""database":"sqlite""#), "\(text)")
            }
            ready.withLock { $0 = false }
            try await client.execute(uri: "/readyz", method: .get) { response in
                let text = String(buffer: response.body)
                #expect(response.status == .serviceUnavailable && text.contains(#""reason":"hsm_unavailable""#), "\(text)")
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                let text = String(buffer: response.body)
                #expect(response.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
                #expect(text.contains(#"route="/readyz",status="503""#) && text.contains(#"route="/healthz",status="200""#), "\(text)")
            }
        }
    }
}
