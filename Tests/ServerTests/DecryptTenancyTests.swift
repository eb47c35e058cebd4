import Foundation
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The decrypt endpoint and its tenants: a key with an organisation opens only the tokens of
/// that organisation's merchants, a key without one any configured merchant's; every call is
/// counted per API key.
@Suite(.serialized, .releasesTestResources)
struct DecryptTenancyTests {
    @Test func aKeyWithAnOrganisationOpensOnlyItsOwnMerchantsTokens() async throws {
        try await withServer { server in
            let token = try server.ecToken()
            // The rival's key: refused, and the token's transaction id is not spent by the refusal.
            let refused = try await server.send(body: token, apiKey: server.rivalDecryptKey)
            #expect(refused.status == 403 && refused.errorCode == "merchant_not_authorized", "\(refused.text)")
            #expect(!refused.text.contains("paymentData"))
            // The example organisation's own key opens it, once.
            let opened = try await server.send(body: token, apiKey: server.exampleDecryptKey)
            #expect(opened.status == 200, "\(opened.text)")
            #expect(try await server.send(body: token, apiKey: server.exampleDecryptKey).errorCode == "replayed_transaction")
            // A key without an organisation is unrestricted (documented).
            #expect(try await server.send(body: try server.ecToken(), apiKey: server.decryptKey).status == 200)
            // An organisation without an enabled paypage has no merchants: its key opens nothing.
            try await server.server.vault.disablePaypage(TestServer.rivalPaypage)
            let none = try await server.send(body: try server.ecToken(), apiKey: server.rivalDecryptKey)
            #expect(none.status == 403 && none.errorCode == "merchant_not_authorized", "\(none.text)")
        }
    }

    @Test func everyDecryptCallIsCountedPerAPIKey() async throws {
        try await withServer { server in
            for _ in 0..<3 { #expect(try await server.send(body: try server.ecToken(), apiKey: server.exampleDecryptKey).status == 200) }
            _ = try await server.send(body: try server.ecToken(), apiKey: server.rivalDecryptKey)
            _ = try await server.send(body: Array("{not json".utf8), apiKey: server.decryptKey)
            let metrics = try await server.operations("/metrics").text
            #expect(metrics.contains(#"paywarden_decrypt_requests_by_key_total{api_key="example-payments",outcome="ok"} 3"#), "\(metrics)")
            #expect(
                metrics.contains(#"paywarden_decrypt_requests_by_key_total{api_key="rival-payments",outcome="merchant_not_authorized"} 1"#))
            #expect(metrics.contains(#"paywarden_decrypt_requests_by_key_total{api_key="payments",outcome="malformed_token"} 1"#))
        }
    }
}
