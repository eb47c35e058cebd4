import Foundation
import OutboundTLS
import PaywardenTestTraits
import PaywardenTesting
import Testing

@Suite(.serialized, .releasesTestResources)
struct HostPolicyTests {
    let policy = try! AppleGatewayHostPolicy(patterns: AppleGatewayHostPolicy.appleHosts)

    @Test func appleHostsAndPodWildcardsAreAllowed() throws {
        for url in [
            "https://apple-pay-gateway.apple.com/paymentservices/paymentSession",
            "https://APPLE-PAY-GATEWAY.apple.com/paymentservices/startSession",
            "https://apple-pay-gateway-nc-pod5.apple.com/paymentservices/startSession",
            "https://apple-pay-gateway-pr-pod12.apple.com:443/paymentservices/paymentSession",
            "https://apple-pay-gateway-cert.apple.com/paymentservices/paymentSession",
            "https://cn-apple-pay-gateway.apple.com/paymentservices/paymentSession",
        ] {
            let endpoint = try policy.validationEndpoint(url)
            #expect(endpoint.scheme == "https")
            #expect(endpoint.path.hasPrefix("/paymentservices/"))
        }
        #expect(
            try policy.validationEndpoint("https://apple-pay-gateway-nc-pod5.apple.com/paymentservices/startSession").absoluteString
                == "https://apple-pay-gateway-nc-pod5.apple.com/paymentservices/startSession")
    }

    @Test(arguments: [
        ("https://evil.example.com/paymentservices/paymentSession", "not one of Apple's"),
        ("http://apple-pay-gateway.apple.com/paymentservices/paymentSession", "only https"),
        ("https://apple-pay-gateway.apple.com:8443/paymentservices/paymentSession", "port 8443"),
        ("https://17.58.0.1/paymentservices/paymentSession", "IP addresses"),
        ("https://127.0.0.1:443/paymentservices/paymentSession", "IP addresses"),
        ("https://2130706433/paymentservices/paymentSession", "IP addresses"),
        ("https://[::1]/paymentservices/paymentSession", "IP addresses"),
        ("https://[2620:149:a44::1]/paymentservices/paymentSession", "IP addresses"),
        ("https://user:pass@apple-pay-gateway.apple.com/paymentservices/paymentSession", "user information"),
        ("https://apple-pay-gateway.apple.com@evil.com/paymentservices/paymentSession", "user information"),
        ("https://apple-pay-gateway.apple.com/paymentservices/paymentSession?x=1", "query"),
        ("https://apple-pay-gateway.apple.com/paymentservices/paymentSession?", "query"),
        ("https://apple-pay-gateway.apple.com/paymentservices/paymentSession#frag", "fragment"),
        ("https://apple-pay-gateway.apple.com/paymentservices/other", "the path must be"),
        ("https://apple-pay-gateway.apple.com/paymentservices/paymentSession/", "the path must be"),
        ("https://apple-pay-gateway.apple.com/paymentservices/../paymentservices/paymentSession", "the path must be"),
        ("https://apple-pay-gateway.apple.com/", "the path must be"),
        ("https://apple-pay-gateway-nc-pod5.apple.com.evil.com/paymentservices/paymentSession", "not one of Apple's"),
        ("https://evil-apple-pay-gateway.apple.com/paymentservices/paymentSession", "not one of Apple's"),
        ("https://apple-pay-gateway-nc-pod.apple.com/paymentservices/paymentSession", "not one of Apple's"),
        ("https://apple-pay-gateway-nc-pod5-x.apple.com/paymentservices/paymentSession", "not one of Apple's"),
        ("https://apple-pay-gateway.apple.com./paymentservices/paymentSession", "not one of Apple's"),
        ("https://apple-pay-gateway.apple.com\\@evil.com/paymentservices/paymentSession", "characters"),
        ("https://apple-pay-gateway.apple.com/payment services/paymentSession", "characters"),
        ("javascript:alert(1)", "only https"),
        ("", "not a valid URL"),
    ])
    func refusedValidationURLs(url: String, why: String) {
        let error = #expect(throws: AppleGatewayError.self) { _ = try policy.validationEndpoint(url) }
        #expect(error?.code == .validationURLRefused)
        #expect(error?.message.contains(why) == true, "\(error?.message ?? "")")
        #expect(error?.isRetryable == false)
    }

    @Test func allowListEntriesAreChecked() throws {
        let custom = try AppleGatewayHostPolicy(patterns: ["gateway.example.com:8443", "node*.example.com"])
        try custom.check(URL(string: "https://gateway.example.com:8443/x")!)
        try custom.check(URL(string: "https://node7.example.com/x")!)
        #expect(throws: AppleGatewayError.self) { try custom.check(URL(string: "https://gateway.example.com/x")!) }
        #expect(throws: AppleGatewayError.self) { try custom.check(URL(string: "https://node7.example.com:8443/x")!) }
        for bad in ["*.apple.com", "10.0.0.1", "[::1]", "::1", "host:0", "host:x", "a.*b.com", "a*b*.example.com", "", "bad_host.com"] {
            #expect(throws: AppleGatewayError.self, "\(bad)") { _ = try AppleGatewayHostPolicy(patterns: [bad]) }
        }
        #expect(throws: AppleGatewayError.self) { _ = try AppleGatewayHostPolicy(patterns: []) }
    }

    @Test func configurationBaseURLMustPassThePolicy() throws {
        #expect(AppleGatewayConfiguration.apple().baseURL.absoluteString == "https://apple-pay-gateway.apple.com")
        #expect(throws: AppleGatewayError.self) {
            _ = try AppleGatewayConfiguration(baseURL: URL(string: "https://evil.example.com")!, hostPolicy: policy)
        }
        #expect(throws: AppleGatewayError.self) {
            _ = try AppleGatewayConfiguration(baseURL: URL(string: "https://apple-pay-gateway.apple.com/v1")!, hostPolicy: policy)
        }
    }

    @Test func paymentSessionRequestsAreValidated() throws {
        let url = "https://apple-pay-gateway.apple.com/paymentservices/paymentSession"
        _ = try PaymentSessionRequest(
            merchantIdentifier: "merchant.com.example", validationURL: url, displayName: "Example Shop", initiative: "web",
            initiativeContext: "shop.example.com")
        _ = try PaymentSessionRequest(
            merchantIdentifier: "merchant.com.example", validationURL: url, displayName: "Example", initiative: "in_app",
            initiativeContext: "anything: 1")
        let refused: [(String, String, String, String, String)] = [
            ("", "Shop", "web", "shop.example.com", "merchantIdentifier"),
            ("merchant/../x", "Shop", "web", "shop.example.com", "merchantIdentifier"),
            ("merchant.com.example", "", "web", "shop.example.com", "displayName"),
            ("merchant.com.example", String(repeating: "x", count: 65), "web", "shop.example.com", "displayName"),
            ("merchant.com.example", "Shop\u{7}", "web", "shop.example.com", "displayName"),
            ("merchant.com.example", "Shop", "browser", "shop.example.com", "initiative"),
            ("merchant.com.example", "Shop", "web", "https://shop.example.com", "initiativeContext"),
            ("merchant.com.example", "Shop", "web", "shop.example.com:443", "initiativeContext"),
            ("merchant.com.example", "Shop", "web", "shop.example.com/pay", "initiativeContext"),
            ("merchant.com.example", "Shop", "messaging", String(repeating: "x", count: 256), "initiativeContext"),
        ]
        for (merchant, name, initiative, context, field) in refused {
            let error = #expect(throws: AppleGatewayError.self) {
                _ = try PaymentSessionRequest(
                    merchantIdentifier: merchant, validationURL: url, displayName: name, initiative: initiative, initiativeContext: context)
            }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains(field) == true, "\(error?.message ?? "")")
        }
    }

    /// A refused validation URL is refused before any connection: the stand-in (allowed, and
    /// running) sees nothing, not even a TLS handshake that reaches HTTP.
    @Test func paymentSessionToARefusedURLMakesNoConnection() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        let port = fixture.standIn.port
        for url in [
            "https://127.0.0.1:\(port)/paymentservices/paymentSession", "http://localhost:\(port)/paymentservices/paymentSession",
            "https://localhost:\(port)/paymentservices/v1/merchantId/x/merchantToken/unlink",
            "https://localhost:\(port + 1)/paymentservices/paymentSession",
            "https://apple-pay-gateway.apple.com.localhost:\(port)/paymentservices/paymentSession",
        ] {
            let request = try PaymentSessionRequest(
                merchantIdentifier: GatewayFixture.merchantID, validationURL: url, displayName: "Shop", initiative: "web",
                initiativeContext: "shop.example.com")
            let error = try await fixture.withClient { client in await gatewayError { _ = try await client.paymentSession(request) } }
            #expect(error?.code == .validationURLRefused, "\(url)")
        }
        #expect(fixture.standIn.requests.isEmpty)
    }

    /// The allowed validation URL: Apple's session object comes back byte for byte.
    @Test func paymentSessionReturnsAppleSessionUnchanged() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        let request = try PaymentSessionRequest(
            merchantIdentifier: GatewayFixture.merchantID,
            validationURL: "https://localhost:\(fixture.standIn.port)/paymentservices/paymentSession", displayName: "Example Shop",
            initiative: "web", initiativeContext: "shop.example.com")
        let session = try await fixture.withClient { try await $0.paymentSession(request) }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(session)) as? [String: Any])
        #expect((object["merchantSessionIdentifier"] as? String)?.hasPrefix("SSH") == true)
        #expect(object["displayName"] as? String == "Example Shop")
        let recorded = try #require(fixture.standIn.requests.first)
        #expect(recorded.method == "POST")
        #expect(recorded.path == "/paymentservices/paymentSession")
        let body = try #require(recorded.jsonBody)
        #expect(body["merchantIdentifier"] as? String == GatewayFixture.merchantID)
        #expect(body["initiative"] as? String == "web")
        #expect(body["initiativeContext"] as? String == "shop.example.com")
        #expect(body["displayName"] as? String == "Example Shop")
    }
}
