import Foundation
import KeyCustody
import MerchantTokens
import NIOHTTP1
import OutboundTLS
import PaywardenServer
import PaywardenServices
import PaywardenStorage
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing
import Vault

/// Merchant tokens through HTTP on loopback against the stand-in Apple gateway (real HTTPS that
/// demands a client certificate from the test WWDR CA, signed here by the identity key in the HSM):
/// Apple's notification, the event fetched and applied, merchants' calls to Apple, and merchant
/// validation with its SSRF refusals.
@Suite(.serialized, .releasesTestResources)
struct MerchantTokenEndpointTests {
    static let merchantID = "merchant.com.example.server"
    static let merchantTokenID = "DNITHE302409093402145671"
    static let pan = "5204245250001488"

    /// A server wired to a fresh stand-in, an identity key for the example merchant in its HSM,
    /// and a key with the `session` and `merchant-tokens` scopes for the example organisation.
    struct Fixture: Sendable {
        let server: TestServer
        let apple: AppleGatewayStandIn
        let webKey: String
        /// The same scopes for the organisation `rival`.
        let rivalWebKey: String
        let clock: TestClock
    }

    final class TestClock: Sendable {
        private let offset = Mutex<TimeInterval>(0)
        func advance(_ seconds: TimeInterval) { offset.withLock { $0 += seconds } }
        var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    }

    func withFixture(
        sources: [String] = ["127.0.0.0/8"], proxies: [String] = [], pendingLimit: Int = 10_000,
        _ body: (Fixture) async throws -> Void
    ) async throws {
        // The test server's key store accepts the shared test CA's certificates.
        let ca = TestCertificateAuthority.shared
        let apple = try await AppleGatewayStandIn.start(clientCA: ca.certificate)
        let (webKey, webEntry) = APIKey.generate(name: "web-checkout", scopes: [.session, .merchantTokens], organization: "example")
        let (rivalWebKey, rivalWebEntry) = APIKey.generate(
            name: "rival-checkout", scopes: [.session, .merchantTokens], organization: "rival")
        let clock = TestClock()
        do {
            try await withServer(
                { configuration in
                    configuration.apiKeys = APIKeyRegistry(
                        keys: configuration.apiKeys.keys
                            + [try APIKey(entry: webEntry), try APIKey(entry: rivalWebEntry)])
                    configuration.merchantTokens.gateway = try AppleGatewayConfiguration(
                        baseURL: apple.baseURL, hostPolicy: try AppleGatewayHostPolicy(patterns: ["localhost:\(apple.port)"]),
                        extraTrustRoots: [apple.serverCA])
                    configuration.merchantTokens.allowedSources = sources.compactMap(IPAddressBlock.init)
                    configuration.trustedProxies = proxies.compactMap(IPAddressBlock.init)
                    configuration.merchantTokens.eventPolicy = MerchantTokenEventPolicy(pendingLimit: pendingLimit, retryBase: 0.2)
                    configuration.merchantTokens.pollInterval = .milliseconds(200)
                    configuration.merchantTokens.publicURL = "https://pay.example.com"
                    configuration.vaultClock = { clock.now }
                },
                prepare: { store in
                    // An admin makes the identity key before the service starts, as in production.
                    let (_, csr) = try await store.create(merchantID: Self.merchantID, purpose: .identity, algorithm: .rsa)
                    let certificate = try ca.issue(csrPEM: csr, merchantID: Self.merchantID, purpose: .identity)
                    _ = try await store.importCertificate(MerchantCertificate(bytes: certificate))
                }
            ) { server in
                try await body(Fixture(server: server, apple: apple, webKey: webKey, rivalWebKey: rivalWebKey, clock: clock))
            }
        } catch {
            try? await apple.stop()
            throw error
        }
        try await apple.stop()
    }

    /// An MPAN registered through eProtect and redeemed: its high-value token.
    func vaultedMerchantToken(_ server: TestServer) async throws -> (token: String, registrationID: String) {
        let registered = try await server.send(
            .POST, "/eProtect/paypage",
            body: try EProtectForms.form(
                token: try server.ecToken(payload: PaymentPayloads.merchantToken(pan: Self.pan)), paypageID: TestServer.examplePaypage,
                reportGroup: "mobile"),
            apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
        let id = try #require(try json(registered)["paypageRegistrationId"] as? String, "\(registered.text)")
        let redeemed = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey)
        let token = try #require((try json(redeemed)["highValueToken"] as? [String: Any])?["token"] as? String, "\(redeemed.text)")
        return (token, id)
    }

    func json(_ reply: TestServer.Reply) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any] ?? [:]
    }

    func notify(_ server: TestServer, event: String, merchant: String = merchantID, headers: [(String, String)] = []) async throws
        -> TestServer.Reply
    {
        try await server.send(.GET, "/v1/apple-pay/\(merchant)/notification/merchantToken/\(event)", apiKey: .some(nil), headers: headers)
    }

    /// The event once it has left `pending` (or nil after `seconds`).
    func settled(_ server: TestServer, event: String, seconds: Double = 20) async throws -> MerchantTokenEventRecord? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let record = try await server.server.database.database.event(id: event), record.state != .pending { return record }
            try await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    func eventFetches(_ apple: AppleGatewayStandIn, event: String) -> [RecordedRequest] {
        apple.requests.filter { $0.path.hasSuffix("/merchantToken/event/\(event)") }
    }

    @Test func anUnlinkEventMakesTheTokenUnusableEndToEnd() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            let (token, registrationID) = try await vaultedMerchantToken(server)
            #expect(try await server.send(.POST, "/v1/tokens/\(token)/detokenize", apiKey: server.vaultKey).status == 200)
            fixture.apple.setEvent(
                "evt-unlink-1", merchantID: Self.merchantID, .event(type: "UNLINK", merchantTokenID: Self.merchantTokenID))

            let notified = try await notify(server, event: "evt-unlink-1")
            #expect(notified.status == 200, "\(notified.text)")
            let record = try #require(try await settled(server, event: "evt-unlink-1"))
            #expect(record.state == .applied && record.eventType == "UNLINK" && record.merchantTokenID == Self.merchantTokenID)
            #expect(record.effect?.contains("unlinked 1") == true, "\(record.effect ?? "nil")")
            #expect(record.attempts == 1)

            let refused = try await server.send(.POST, "/v1/tokens/\(token)/detokenize", apiKey: server.vaultKey)
            #expect(refused.status == 410 && refused.errorCode == "token_unlinked", "\(refused.text)")

            // Apple's fetch carried what Apple requires, over mutual TLS with the HSM-held key.
            let fetch = try #require(eventFetches(fixture.apple, event: "evt-unlink-1").first)
            #expect(UUID(uuidString: fetch.headers.first { $0.0.lowercased() == "x-request-id" }?.1 ?? "") != nil)
            #expect(fetch.method == "GET" && fetch.clientCertificateSubject?.contains(Self.merchantID) == true)

            // The same notification again (Apple retries): 200, nothing fetched or changed twice.
            #expect(try await notify(server, event: "evt-unlink-1").status == 200)
            try await Task.sleep(for: .milliseconds(600))
            #expect(eventFetches(fixture.apple, event: "evt-unlink-1").count == 1)
            #expect(try await server.server.database.database.event(id: "evt-unlink-1")?.attempts == 1)

            // Neither the account number, the token nor the registration ID reached the log.
            let logs = server.logs.text
            #expect(!logs.contains(Self.pan) && !logs.contains(token) && !logs.contains(registrationID))
        }
    }

    @Test func metadataAndUnknownEventsAreRecordedWithoutHarm() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            let (token, _) = try await vaultedMerchantToken(server)
            // The payload's own metadata is on the token from its registration.
            let registered = try #require(try await server.server.database.database.token(token, organization: "example"))
            #expect(String(decoding: registered.merchantTokenMetadata ?? [], as: UTF8.self).contains("https://example.test/art.png"))
            fixture.apple.setEvent(
                "evt-meta", merchantID: Self.merchantID,
                .event(
                    type: "UPDATED_METADATA", merchantTokenID: Self.merchantTokenID,
                    metadata: StandInTokenMetadata(cardMetadata: ["fpanSuffix": "4242", "expirationDate": "12/31"])))
            fixture.apple.setEvent(
                "evt-new-kind", merchantID: Self.merchantID, .event(type: "SOMETHING_NEW", merchantTokenID: Self.merchantTokenID))
            #expect(try await notify(server, event: "evt-meta").status == 200)
            #expect(try await notify(server, event: "evt-new-kind").status == 200)
            let meta = try #require(try await settled(server, event: "evt-meta"))
            #expect(meta.state == .applied && meta.effect?.contains("metadata recorded on 1") == true, "\(meta.effect ?? "nil")")
            let record = try #require(try await server.server.database.database.token(token, organization: "example"))
            // The event's card metadata replaced the payload's; the card art it did not mention stayed.
            let metadata = String(decoding: record.merchantTokenMetadata ?? [], as: UTF8.self)
            #expect(metadata.contains("4242") && !metadata.contains("1488") && metadata.contains("art.png"), "\(metadata)")
            let unknown = try #require(try await settled(server, event: "evt-new-kind"))
            #expect(unknown.state == .applied && unknown.eventType == "SOMETHING_NEW")
            #expect(try await server.send(.POST, "/v1/tokens/\(token)/detokenize", apiKey: server.vaultKey).status == 200)
        }
    }

    @Test func fetchesAreRetriedWhileAppleFailsOrIsDownThenGivenUpAfterSevenDays() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            fixture.apple.setEvent("evt-retry", merchantID: Self.merchantID, .event(type: "UNLINK", merchantTokenID: "MT-RETRY"))
            fixture.apple.failNext(2, status: 500)
            #expect(try await notify(server, event: "evt-retry").status == 200)
            let retried = try #require(try await settled(server, event: "evt-retry"))
            #expect(retried.state == .applied && retried.attempts == 3, "\(retried)")

            // Apple unreachable: the event waits with the reason, and is applied once Apple is back.
            fixture.apple.setEvent("evt-down", merchantID: Self.merchantID, .event(type: "UNLINK", merchantTokenID: "MT-DOWN"))
            try await fixture.apple.stop()
            #expect(try await notify(server, event: "evt-down").status == 200)
            // The first attempt ends once the connection has been tried for the connect timeout.
            var waiting = try #require(try await server.server.database.database.event(id: "evt-down"))
            for _ in 0..<150 where waiting.lastError == nil {
                try await Task.sleep(for: .milliseconds(100))
                waiting = try #require(try await server.server.database.database.event(id: "evt-down"))
            }
            #expect(waiting.state == .pending && waiting.attempts >= 1 && waiting.lastError?.hasPrefix("upstream_unavailable") == true)
            try await fixture.apple.restart()
            let recovered = try #require(try await settled(server, event: "evt-down"))
            #expect(recovered.state == .applied, "\(recovered)")

            // Down for longer than Apple keeps the event: failed, and `retry` can still be asked.
            fixture.apple.setEvent("evt-late", merchantID: Self.merchantID, .event(type: "UNLINK", merchantTokenID: "MT-LATE"))
            try await fixture.apple.stop()
            #expect(try await notify(server, event: "evt-late").status == 200)
            try await Task.sleep(for: .milliseconds(500))
            fixture.clock.advance(8 * 86_400)
            let failed = try #require(try await settled(server, event: "evt-late"))
            #expect(failed.state == .failed && failed.lastError?.hasPrefix("upstream_unavailable") == true, "\(failed)")
            try await fixture.apple.restart()
            let retried2 = try await server.server.merchantTokenService.retry(eventID: "evt-late", user: "test")
            #expect(retried2.state == .applied)
        }
    }

    @Test func notificationsAreHeardFromAllowedSourcesOnlyAndBounded() async throws {
        // Apple's ranges only: loopback is refused.
        try await withFixture(sources: ["17.58.0.0/18", "17.58.192.0/18"]) { fixture in
            let reply = try await notify(fixture.server, event: "evt-1")
            #expect(reply.status == 403 && reply.errorCode == "forbidden")
            // A forwarded address is not believed from a peer that is not a configured proxy.
            let spoofed = try await notify(fixture.server, event: "evt-1", headers: [("X-Forwarded-For", "17.58.0.9")])
            #expect(spoofed.status == 403)
            #expect(try await fixture.server.server.database.database.event(id: "evt-1") == nil)
        }
        // Behind a configured proxy (loopback), the right-most address that is not a proxy counts.
        try await withFixture(sources: ["17.58.0.0/18"], proxies: ["127.0.0.1/32"], pendingLimit: 2) { fixture in
            let server = fixture.server
            try await fixture.apple.stop()
            let apple = [("X-Forwarded-For", "17.58.0.9")]
            let heard = try await notify(server, event: "evt-a", headers: apple)
            #expect(heard.status == 200, "\(heard.text)")
            #expect(try await notify(server, event: "evt-b", headers: [("X-Forwarded-For", "17.58.0.9, 10.0.0.1")]).status == 403)
            #expect(try await notify(server, event: "evt-c", headers: [("X-Forwarded-For", "10.0.0.1, 17.58.0.9")]).status == 200)
            // Bounds: an unknown merchant, a malformed or oversized event id, a full outbox.
            let unknown = try await notify(server, event: "evt-d", merchant: "merchant.com.unknown", headers: apple)
            #expect(unknown.status == 404 && unknown.errorCode == "unknown_merchant")
            #expect(try await notify(server, event: String(repeating: "e", count: 129), headers: apple).status == 400)
            #expect(try await notify(server, event: "evt%20x", headers: apple).status == 400)
            let full = try await notify(server, event: "evt-e", headers: apple)
            #expect(full.status == 503 && full.errorCode == "overloaded" && full.header("Retry-After") != nil)
            #expect(try await notify(server, event: "evt-a", headers: apple).status == 200, "a repeat is still answered")
        }
    }

    @Test func merchantsUnlinkAndChangeTheNotificationURLThroughTheAPI() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            let (token, _) = try await vaultedMerchantToken(server)
            let body = Array(#"{"merchantId":"\#(Self.merchantID)","merchantTokenId":"\#(Self.merchantTokenID)"}"#.utf8)
            // The rival organisation has no paypage for the merchant; the decrypt-only key has no scope.
            #expect(try await server.send(.POST, "/v1/merchant-tokens/unlink", body: body, apiKey: server.rivalKey).status == 403)
            #expect(try await server.send(.POST, "/v1/merchant-tokens/unlink", body: body, apiKey: server.decryptKey).status == 403)

            let url = "https://merchant.example/apple/v1/apple-pay/\(Self.merchantID)"
            let update = Array(#"{"merchantId":"\#(Self.merchantID)","merchantTokenId":"\#(Self.merchantTokenID)","url":"\#(url)"}"#.utf8)
            let updated = try await server.send(.POST, "/v1/merchant-tokens/notification-url", body: update, apiKey: fixture.webKey)
            #expect(updated.status == 204, "\(updated.text)")
            let metadataCall = try #require(fixture.apple.requests.first { $0.path.hasSuffix("/merchantToken/updateMerchantMetadata") })
            let sent = try JSONSerialization.jsonObject(with: Data(metadataCall.body)) as? [String: Any]
            #expect(sent?["merchantTokenIdentifier"] as? String == Self.merchantTokenID)
            #expect((sent?["merchantMetadata"] as? [String: Any])?["tokenNotificationURL"] as? String == url)

            let unlinked = try await server.send(.POST, "/v1/merchant-tokens/unlink", body: body, apiKey: fixture.webKey)
            let unlinkedCount = try json(unlinked)["tokensUnlinked"] as? Int
            #expect(unlinked.status == 200 && unlinkedCount == 1, "\(unlinked.text)")
            #expect(fixture.apple.requests.contains { $0.path.hasSuffix("/merchantToken/unlink") })
            let refused = try await server.send(.POST, "/v1/tokens/\(token)/detokenize", apiKey: server.vaultKey)
            #expect(refused.errorCode == "token_unlinked")

            // An identifier that is not one never reaches Apple, the vault or the audit log.
            let hostile = Array(#"{"merchantId":"\#(Self.merchantID)","merchantTokenId":"4111 1111 1111 1111"}"#.utf8)
            let refusedID = try await server.send(.POST, "/v1/merchant-tokens/unlink", body: hostile, apiKey: fixture.webKey)
            #expect(refusedID.status == 400 && refusedID.errorCode == "invalid_request", "\(refusedID.text)")
            let audit = (try? String(contentsOfFile: try #require(server.server.configuration.auditLogPath), encoding: .utf8)) ?? ""
            #expect(!audit.contains("4111 1111") && !audit.contains(token))
            let malformed = try await server.send(.POST, "/v1/merchant-tokens/unlink", body: Array("{}".utf8), apiKey: fixture.webKey)
            #expect(malformed.status == 400 && malformed.errorCode == "invalid_request")
        }
    }

    /// Two organisations with paypages for one Apple merchant id: one's unlink through the API
    /// unlinks its own token only, and its count says nothing of the other's.
    @Test func anOrganisationsUnlinkLeavesAnotherOrganisationsTokens() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            let vault = server.server.vault
            let (token, _) = try await vaultedMerchantToken(server)
            let otherPolicy = OrganizationPolicy(organization: "other", tokenFormat: .t, merchantIdentifiers: [Self.merchantID])
            let other = try await vault.issueToken(
                for: try AccountFacts(paymentData: PaymentPayloads.merchantToken(pan: Self.pan)), policy: otherPolicy)
            let body = Array(#"{"merchantId":"\#(Self.merchantID)","merchantTokenId":"\#(Self.merchantTokenID)"}"#.utf8)
            let unlinked = try await server.send(.POST, "/v1/merchant-tokens/unlink", body: body, apiKey: fixture.webKey)
            let count = try json(unlinked)["tokensUnlinked"] as? Int
            #expect(unlinked.status == 200 && count == 1, "\(unlinked.text)")
            #expect(try await server.server.database.database.token(token, organization: "example")?.state == .unlinked)
            #expect(try await server.server.database.database.token(other.token, organization: "other")?.state == .active)
            #expect(try await vault.detokenize(other.token, organization: "other").accountNumber.revealed == Self.pan)
        }
    }

    func sessionBody(_ validationURL: String, merchant: String = merchantID) -> [UInt8] {
        Array(
            #"""
            {"merchantId":"\#(merchant)","validationURL":"\#(validationURL)","displayName":"Example Store",\#
            "initiative":"web","initiativeContext":"shop.example.com"}
            """#.utf8)
    }

    @Test func merchantValidationReturnsApplesSessionAndRefusesEveryOtherDestination() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            let port = fixture.apple.port
            let good = "https://localhost:\(port)/paymentservices/startSession"
            let session = try await server.send(.POST, "/v1/apple-pay/payment-session", body: sessionBody(good), apiKey: fixture.webKey)
            #expect(session.status == 200, "\(session.text)")
            let sent = try #require(fixture.apple.requests.last { $0.path == "/paymentservices/startSession" })
            let object = try json(session)
            #expect(
                object["displayName"] as? String == "Example Store"
                    && (object["merchantSessionIdentifier"] as? String)?.hasPrefix("SSH") == true)
            let request = try JSONSerialization.jsonObject(with: Data(sent.body)) as? [String: Any]
            #expect(request?["merchantIdentifier"] as? String == Self.merchantID && request?["initiative"] as? String == "web")

            let before = fixture.apple.requests.count
            for refused in [
                "http://localhost:\(port)/paymentservices/startSession", "https://evil.example.com/paymentservices/startSession",
                "https://localhost:1/paymentservices/startSession", "https://127.0.0.1:\(port)/paymentservices/startSession",
                "https://[::1]:\(port)/paymentservices/startSession", "https://localhost:\(port)/paymentservices/startSession?x=1",
                "https://user@localhost:\(port)/paymentservices/startSession", "https://localhost:\(port)/internal/admin",
            ] {
                let reply = try await server.send(
                    .POST, "/v1/apple-pay/payment-session", body: sessionBody(refused), apiKey: fixture.webKey)
                #expect(reply.status == 400 && reply.errorCode == "validation_url_refused", "\(refused): \(reply.text)")
            }
            #expect(fixture.apple.requests.count == before, "no refused URL was connected to")

            // A redirect is never followed.
            fixture.apple.redirectNext(1, to: "https://localhost:\(port)/paymentservices/paymentSession")
            let redirected = try await server.send(.POST, "/v1/apple-pay/payment-session", body: sessionBody(good), apiKey: fixture.webKey)
            #expect(redirected.status == 502 && redirected.errorCode == "apple_request_refused", "\(redirected.text)")
            #expect(!fixture.apple.requests.contains { $0.path == "/paymentservices/paymentSession" })

            // Another organisation's merchant, bad fields, no key.
            let other = try await server.send(
                .POST, "/v1/apple-pay/payment-session", body: sessionBody(good, merchant: "merchant.com.rival"), apiKey: fixture.webKey)
            #expect(other.status == 403 && other.errorCode == "merchant_not_authorized")
            let noKey = try await server.send(.POST, "/v1/apple-pay/payment-session", body: sessionBody(good), apiKey: .some(nil))
            #expect(noKey.status == 401)
            let badName = Array(
                (#"{"merchantId":"\#(Self.merchantID)","validationURL":"\#(good)","displayName":"","#
                    + #""initiative":"web","initiativeContext":"x"}"#).utf8)
            let invalid = try await server.send(.POST, "/v1/apple-pay/payment-session", body: badName, apiKey: fixture.webKey)
            #expect(invalid.status == 400 && invalid.errorCode == "invalid_request")
        }
    }
}
