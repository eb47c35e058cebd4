import Foundation
import NIOHTTP1
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The series the alerts and the dashboard read (deploy/prometheus/alerts.yml), under their exact
/// names, present at 0 before anything happened, then counting: request latency by route
/// template, HSM operation latency, queue wait and pending operations, Apple's calls by outcome,
/// and certificate expiry labelled with the key's purpose and state.
@Suite(.serialized, .releasesTestResources)
struct AlertMetricsTests {
    @Test func theAlertsSeriesAreThereFromTheStartAndCount() async throws {
        try await withServer { server in
            let before = try await server.operations("/metrics").text
            for series in [
                #"paywarden_http_request_duration_seconds_count{route="/v1/payment-tokens/decrypt",method="POST",status_class="2xx"} 0"#,
                #"paywarden_http_request_duration_seconds_count{route="/v1/payment-tokens/decrypt",method="POST",status_class="5xx"} 0"#,
                #"paywarden_hsm_operation_duration_seconds_count{operation="ecdh-kdf"} 0"#,
                // Present, and not at 0: the vault keys' audit lines at start are sealed with HMACs.
                #"paywarden_hsm_operation_duration_seconds_count{operation="hmac-sha256"} "#,
                #"paywarden_hsm_operation_duration_seconds_count{operation="rsa-pss-sign"} 0"#,
                "paywarden_hsm_operations_pending 0",
                "paywarden_hsm_operations_pending_limit \(server.server.hsm.configuration.maxPendingOperations)",
                #"paywarden_apple_requests_total{operation="merchant-token-event",outcome="http_5xx"} 0"#,
                #"paywarden_apple_requests_total{operation="payment-session",outcome="unreachable"} 0"#,
            ] {
                #expect(before.contains(series), "missing at the start: \(series)")
            }
            #expect(before.contains("paywarden_hsm_queue_wait_seconds_bucket{le=\"0.001\"}"), "\(before)")
            #expect(before.contains(#"purpose="processing",state="active""#), "certificate expiry by purpose and state")
            #expect(!before.contains("route=\"/v1/registrations/1"), "routes are templates")

            #expect(try await server.send(body: try server.ecToken()).status == 200)
            let after = try await server.operations("/metrics").text
            #expect(
                after.contains(
                    #"paywarden_http_request_duration_seconds_count{route="/v1/payment-tokens/decrypt",method="POST",status_class="2xx"} 1"#
                ))
            let derives = after.split(separator: "\n").first {
                $0.hasPrefix(#"paywarden_hsm_operation_duration_seconds_count{operation="ecdh-kdf"}"#)
            }
            #expect(derives.flatMap { Int($0.split(separator: " ").last ?? "") }.map { $0 >= 1 } == true, "\(derives ?? "none")")
            // A path that matches no route is counted under one series, never its raw path.
            _ = try await server.send(.GET, "/v1/registrations/4111111111111111111/unknown", apiKey: .some(nil))
            let unmatched = try await server.operations("/metrics").text
            #expect(
                unmatched.contains(#"paywarden_http_request_duration_seconds_count{route="NotFound",method="GET",status_class="4xx"} 1"#)
            )
        }
    }
}
