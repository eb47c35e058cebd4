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

/// Web merchants through HTTP on loopback against the stand-in Apple gateway (real HTTPS that
/// demands the platform integrator's identity certificate, signed here by its key in the HSM):
/// register, show, unregister, the refusals made before any call, Apple's refusals mapped, the
/// domain-verification file served, and merchant validation for a registered merchant.
@Suite(.serialized, .releasesTestResources)
struct WebMerchantEndpointTests {
    static let integratorID = "platformintegrator.com.example.server"
    static let merchantID = "merchant.com.example.server"
    /// Every punctuation character of Apple's set.
    static let partnerID = "ABC-123~_+&@$!|,.;x"
    static let file = Array("7B227073704964223A2246363246453546354242443045".utf8) + [0x0A, 0x00, 0xFF]

    struct Fixture: Sendable {
        let server: TestServer
        let apple: AppleGatewayStandIn
        let platformKey: String
        let sessionKey: String
        /// Keys of two organisations: each acts on its own registrations only.
        let examplePlatformKey: String
        let rivalPlatformKey: String
        let rivalSessionKey: String
        let integratorCertificate: [UInt8]
        let merchantCertificate: [UInt8]
        /// The merchants' sites the domain check reads: every domain serves the organisation
        /// `example`'s challenge unless a test says otherwise.
        let sites: MerchantSiteStandIn
        let exampleChallenge: String
        let rivalChallenge: String
    }

    /// `integrator`: the id PAYWARDEN_PLATFORM_INTEGRATOR_ID names (the stand-in accepts only `integratorID`).
    func withFixture(integrator: String? = integratorID, _ body: (Fixture) async throws -> Void) async throws {
        let ca = TestCertificateAuthority.shared
        let apple = try await AppleGatewayStandIn.start(clientCA: ca.certificate)
        apple.acceptPlatformIntegrator(Self.integratorID)
        let sites = try await MerchantSiteStandIn.start()
        let (platformKey, platformEntry) = APIKey.generate(name: "platform-operator", scopes: [.platform], organization: "example")
        let (sessionKey, sessionEntry) = APIKey.generate(name: "web-checkout", scopes: [.session], organization: "example")
        let (examplePlatformKey, examplePlatformEntry) = APIKey.generate(
            name: "example-platform", scopes: [.platform], organization: "example")
        let (rivalPlatformKey, rivalPlatformEntry) = APIKey.generate(name: "rival-platform", scopes: [.platform], organization: "rival")
        let (rivalSessionKey, rivalSessionEntry) = APIKey.generate(name: "rival-checkout", scopes: [.session], organization: "rival")
        let certificates = CertificateBox()
        do {
            try await withServer(
                { configuration in
                    configuration.apiKeys = APIKeyRegistry(
                        keys: configuration.apiKeys.keys
                            + [
                                try APIKey(entry: platformEntry), try APIKey(entry: sessionEntry), try APIKey(entry: examplePlatformEntry),
                                try APIKey(entry: rivalPlatformEntry), try APIKey(entry: rivalSessionEntry),
                            ])
                    configuration.merchantTokens.gateway = try AppleGatewayConfiguration(
                        baseURL: apple.baseURL, hostPolicy: try AppleGatewayHostPolicy(patterns: ["localhost:\(apple.port)"]),
                        extraTrustRoots: [apple.serverCA])
                    configuration.merchantTokens.platformIntegratorID = integrator
                    configuration.webMerchantDomainCheck = sites.domainCheck
                },
                prepare: { store in
                    // The integrator's identity key is made like a merchant's: `keys create --purpose identity`.
                    for (id, slot) in [(Self.integratorID, 0), (Self.merchantID, 1)] {
                        let (_, csr) = try await store.create(merchantID: id, purpose: .identity, algorithm: .rsa)
                        let certificate = try ca.issue(csrPEM: csr, merchantID: id, purpose: .identity)
                        _ = try await store.importCertificate(MerchantCertificate(bytes: certificate))
                        certificates.set(slot, certificate)
                    }
                }
            ) { server in
                let exampleChallenge = try await server.server.webMerchantService.domainChallenge(organization: "example")
                let rivalChallenge = try await server.server.webMerchantService.domainChallenge(organization: "rival")
                sites.serveEverywhere([exampleChallenge])
                try await body(
                    Fixture(
                        server: server, apple: apple, platformKey: platformKey, sessionKey: sessionKey,
                        examplePlatformKey: examplePlatformKey, rivalPlatformKey: rivalPlatformKey, rivalSessionKey: rivalSessionKey,
                        integratorCertificate: certificates.get(0), merchantCertificate: certificates.get(1), sites: sites,
                        exampleChallenge: exampleChallenge, rivalChallenge: rivalChallenge))
            }
        } catch {
            try? await apple.stop()
            throw error
        }
        try await apple.stop()
    }

    final class CertificateBox: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Int: [UInt8]] = [:]
        func set(_ slot: Int, _ value: [UInt8]) { lock.withLock { values[slot] = value } }
        func get(_ slot: Int) -> [UInt8] { lock.withLock { values[slot] ?? [] } }
    }

    func json(_ reply: TestServer.Reply) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any] ?? [:]
    }

    func body(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object))
    }

    func register(_ fixture: Fixture, id: String = partnerID, domains: [String], extra: [String: Any] = [:]) async throws
        -> TestServer.Reply
    {
        var object: [String: Any] = [
            "partnerInternalMerchantIdentifier": id, "partnerMerchantName": "Example Merchant", "domainNames": domains,
        ]
        object.merge(extra) { $1 }
        return try await fixture.server.send(.POST, "/v1/apple-pay/web-merchants", body: try body(object), apiKey: fixture.platformKey)
    }

    func storeFile(_ fixture: Fixture) async throws {
        _ = try await fixture.server.server.webMerchantService.storeDomainAssociation(Self.file, user: "test")
    }

    static func path(_ id: String) -> String { "/v1/apple-pay/web-merchants/\(WebMerchantField.pathSegment(id))" }

    @Test func registerShowAndUnregisterOverMutualTLSWithTheIntegratorsKey() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            try await storeFile(fixture)
            let registered = try await register(
                fixture, domains: ["shop.example.com", "Pay.Example.com"], extra: ["merchantUrl": "https://example.com"])
            #expect(registered.status == 201, "\(registered.text)")
            let record = try json(registered)
            #expect(record["partnerInternalMerchantIdentifier"] as? String == Self.partnerID)
            #expect(record["domainNames"] as? [String] == ["shop.example.com", "pay.example.com"])
            #expect(record["encryptTo"] as? String == Self.integratorID, "encryptTo defaults to the integrator id")
            #expect(record["state"] as? String == "active" && record["merchantUrl"] as? String == "https://example.com")
            #expect(record["domainAssociationSha256"] as? String == WebMerchantField.sha256Hex(Self.file))

            // Apple got every field, over mutual TLS with the integrator's certificate, never a merchant's.
            let call = try #require(fixture.apple.webMerchantRequests.last)
            #expect(call.path == "/paymentservices/registerMerchant" && call.method == "POST")
            #expect(call.clientCertificateDER == fixture.integratorCertificate)
            #expect(UUID(uuidString: call.header("x-request-id") ?? "") != nil)
            let sent = try #require(call.jsonBody)
            #expect(sent["partnerInternalMerchantIdentifier"] as? String == Self.partnerID)
            #expect(sent["encryptTo"] as? String == Self.integratorID && sent["partnerMerchantName"] as? String == "Example Merchant")
            #expect(sent["domainNames"] as? [String] == ["shop.example.com", "pay.example.com"])
            #expect(sent["merchantUrl"] as? String == "https://example.com")

            // More domains in a second call: the record is cumulative.
            let more = try await register(fixture, domains: ["shop.example.com", "third.example.org"])
            #expect(more.status == 201, "\(more.text)")
            #expect(try json(more)["domainNames"] as? [String] == ["shop.example.com", "pay.example.com", "third.example.org"])

            // Show: Apple's details (percent-encoded path, uppercase SHA-256, unknown field ignored) beside the record.
            let shown = try await server.send(.GET, Self.path(Self.partnerID), apiKey: fixture.platformKey)
            #expect(shown.status == 200, "\(shown.text)")
            let view = try json(shown)
            #expect(view["encryptToMatches"] as? Bool == true, "\(shown.text)")
            let apple = try #require(view["apple"] as? [String: Any])
            #expect(apple["encryptTo"] as? String == MerchantDetails.encryptToHash(Self.integratorID))
            #expect(apple["partnerMerchantValidationURI"] as? String == "/.well-known/apple-developer-merchantid-domain-association")
            #expect((view["domainsOnlyHere"] as? [String])?.isEmpty == true && (view["domainsOnlyAtApple"] as? [String])?.isEmpty == true)
            let detailsCall = try #require(fixture.apple.webMerchantRequests.last)
            #expect(detailsCall.path == "/paymentservices/merchant/ABC-123~_%2B%26%40%24%21%7C%2C.%3Bx", "\(detailsCall.path)")

            // Unregister a subset: the merchant stays active.
            let subset = try await server.send(
                .POST, Self.path(Self.partnerID) + "/unregister",
                body: try body(["domainNames": ["pay.example.com"], "reason": "merchant closed that site"]), apiKey: fixture.platformKey)
            #expect(subset.status == 200, "\(subset.text)")
            #expect(try json(subset)["domainNames"] as? [String] == ["shop.example.com", "third.example.org"])
            #expect(fixture.apple.registeredWebMerchant(Self.partnerID)?.domainNames == ["shop.example.com", "third.example.org"])
            let unregisterCall = try #require(fixture.apple.webMerchantRequests.last?.jsonBody)
            #expect(unregisterCall["reason"] as? String == "merchant closed that site")

            // A domain never registered is refused before any call.
            let before = fixture.apple.webMerchantRequests.count
            let unknownDomain = try await server.send(
                .POST, Self.path(Self.partnerID) + "/unregister",
                body: try body(["domainNames": ["other.example.com"], "reason": "x"]), apiKey: fixture.platformKey)
            #expect(unknownDomain.status == 400 && unknownDomain.errorCode == "invalid_request", "\(unknownDomain.text)")
            #expect(fixture.apple.webMerchantRequests.count == before)

            // The last domains: Apple deletes the registration, Paywarden records it deleted.
            let last = try await server.send(
                .POST, Self.path(Self.partnerID) + "/unregister",
                body: try body(["domainNames": ["shop.example.com", "third.example.org"], "reason": "account closed"]),
                apiKey: fixture.platformKey)
            let lastState = try json(last)["state"] as? String
            #expect(last.status == 200 && lastState == "deleted", "\(last.text)")
            #expect(fixture.apple.registeredWebMerchant(Self.partnerID) == nil)
            let stored = try await server.server.database.database.webMerchant(id: Self.partnerID)
            #expect(stored?.state == .deleted && stored?.domainNames.isEmpty == true)
            let listed = try await server.send(.GET, "/v1/apple-pay/web-merchants", apiKey: fixture.platformKey)
            #expect(listed.status == 200 && listed.text.contains("\"deleted\""), "\(listed.text)")

            // The other scopes may not: the platform scope is required.
            let refused = try await server.send(
                .POST, "/v1/apple-pay/web-merchants", body: try body(["partnerInternalMerchantIdentifier": "abc"]),
                apiKey: fixture.sessionKey)
            #expect(refused.status == 403, "\(refused.text)")
            let unknown = try await server.send(.GET, Self.path("nobody-here"), apiKey: fixture.platformKey)
            #expect(unknown.status == 404 && unknown.errorCode == "web_merchant_not_found", "\(unknown.text)")
        }
    }

    @Test func everyLimitIsCheckedBeforeAnyCallReachesApple() async throws {
        try await withFixture { fixture in
            try await storeFile(fixture)
            let ninetyNine = (1...99).map { "d\($0).example.com" }
            let full = try await register(fixture, id: "full-merchant", domains: ninetyNine)
            #expect(full.status == 201, "\(full.text)")
            let calls = fixture.apple.webMerchantRequests.count

            let refusals: [(String, [String], [String: Any], String)] = [
                ("full-merchant", ["d100.example.com"], [:], "web_merchant_domain_limit"),
                ("new-merchant", (1...100).map { "e\($0).example.com" }, [:], "invalid_request"),
                ("ab", ["shop.example.com"], [:], "invalid_request"),
                (String(repeating: "a", count: 1025), ["shop.example.com"], [:], "invalid_request"),
                ("has space", ["shop.example.com"], [:], "invalid_request"),
                ("has#hash", ["shop.example.com"], [:], "invalid_request"),
                ("dup-merchant", ["shop.example.com", "SHOP.example.com"], [:], "invalid_request"),
                ("bad-domain", ["https://shop.example.com"], [:], "invalid_request"),
                ("bad-domain", ["*.example.com"], [:], "invalid_request"),
                ("bad-domain", ["localhost"], [:], "invalid_request"),
                ("bad-domain", ["10.0.0.1"], [:], "invalid_request"),
                ("bad-domain", [], [:], "invalid_request"),
                ("long-name", ["shop.example.com"], ["partnerMerchantName": String(repeating: "n", count: 1025)], "invalid_request"),
                ("bad-url", ["shop.example.com"], ["merchantUrl": "http://example.com"], "invalid_request"),
            ]
            for (id, domains, extra, code) in refusals {
                let reply = try await register(fixture, id: id, domains: domains, extra: extra)
                #expect(reply.errorCode == code && reply.status == (code == "invalid_request" ? 400 : 422), "\(id): \(reply.text)")
            }
            let unregisterTooLong = try await fixture.server.send(
                .POST, Self.path("full-merchant") + "/unregister",
                body: try body(["domainNames": ["d1.example.com"], "reason": String(repeating: "r", count: 1025)]),
                apiKey: fixture.platformKey)
            #expect(unregisterTooLong.status == 400, "\(unregisterTooLong.text)")
            let badPath = try await fixture.server.send(.GET, "/v1/apple-pay/web-merchants/a%23b", apiKey: fixture.platformKey)
            #expect(badPath.status == 400 && badPath.errorCode == "invalid_request", "\(badPath.text)")
            #expect(fixture.apple.webMerchantRequests.count == calls, "no refused request reached Apple")
        }
    }

    @Test func applesRefusalsSayWhatToFixAndA500IsRetried() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            // No domain-verification file stored yet: refused before any call.
            let noFile = try await register(fixture, domains: ["shop.example.com"])
            #expect(noFile.status == 409 && noFile.errorCode == "domain_association_missing", "\(noFile.text)")
            #expect(fixture.apple.webMerchantRequests.isEmpty)
            try await storeFile(fixture)

            fixture.apple.failWebMerchantNext(1, status: 401)
            let unauthorized = try await register(fixture, domains: ["shop.example.com"])
            #expect(unauthorized.status == 502 && unauthorized.errorCode == "apple_platform_unauthorized", "\(unauthorized.text)")
            #expect(unauthorized.text.range(of: "correlation id [0-9a-f-]{36}", options: .regularExpression) != nil, "\(unauthorized.text)")
            #expect(unauthorized.text.contains("PAYWARDEN_PLATFORM_INTEGRATOR_ID"), "\(unauthorized.text)")
            #expect(unauthorized.text.contains("Payment Services Exception Unauthorized"))
            #expect(fixture.apple.webMerchantRequests.count == 1, "a 401 is not retried")

            fixture.apple.failWebMerchantNext(1, status: 417)
            let notRegistered = try await register(fixture, domains: ["shop.example.com"])
            #expect(notRegistered.status == 502 && notRegistered.errorCode == "apple_platform_not_registered", "\(notRegistered.text)")
            #expect(notRegistered.text.contains("Payment Platform Integrator ID"), "\(notRegistered.text)")
            #expect(fixture.apple.webMerchantRequests.count == 2, "a 417 is not retried")

            fixture.apple.failWebMerchantNext(1, status: 400)
            let malformed = try await register(fixture, domains: ["shop.example.com"])
            #expect(malformed.status == 502 && malformed.errorCode == "apple_request_refused", "\(malformed.text)")
            #expect(malformed.text.contains("Bad Request"))

            // 500, then 200: retried, and recorded once.
            fixture.apple.failWebMerchantNext(1, status: 500)
            let retried = try await register(fixture, domains: ["shop.example.com"])
            #expect(retried.status == 201, "\(retried.text)")
            #expect(fixture.apple.webMerchantRequests.count == 5)
            // 500 every time: bounded, then 503 upstream_unavailable.
            fixture.apple.failWebMerchantNext(10, status: 500)
            let down = try await register(fixture, domains: ["shop.example.com", "down.example.com"])
            #expect(down.status == 503 && down.errorCode == "upstream_unavailable", "\(down.text)")
            #expect(fixture.apple.webMerchantRequests.count == 5 + AppleGatewayClient.webMerchantAttempts)
            fixture.apple.failWebMerchantNext(0, status: 500)

            // Registering the same domains again (Apple's 200 or 400, unverified which): the registration as
            // recorded, Apple not asked; with a new domain, only that one is sent.
            fixture.apple.answerRepeatedRegistration(400)
            let calls = fixture.apple.webMerchantRequests.count
            let repeated = try await register(fixture, domains: ["shop.example.com"])
            #expect(repeated.status == 201 && fixture.apple.webMerchantRequests.count == calls, "\(repeated.text)")
            let grown = try await register(fixture, domains: ["shop.example.com", "more.example.com"])
            #expect(grown.status == 201, "\(grown.text)")
            #expect(fixture.apple.webMerchantRequests.last?.jsonBody?["domainNames"] as? [String] == ["more.example.com"])
            let stored = try await server.server.database.database.webMerchant(id: Self.partnerID)
            #expect(stored?.domainNames == ["shop.example.com", "more.example.com"] && stored?.state == .active)

            // A merchant's identity certificate cannot call these endpoints: the stand-in answers as Apple does.
            let audit = try AuditLog(path: server.server.configuration.auditLogPath ?? "/nonexistent").records()
            #expect(audit.contains { $0.action == "web-merchants.register" && $0.result == "refused" })
            #expect(audit.contains { $0.action == "web-merchants.register" && $0.result == "ok" && $0.merchantID == Self.partnerID })
        }
    }

    @Test func withoutTheIntegratorSettingEveryCallIsRefused() async throws {
        try await withFixture(integrator: nil) { fixture in
            try await storeFile(fixture)
            let reply = try await register(fixture, domains: ["shop.example.com"])
            #expect(reply.status == 409 && reply.errorCode == "platform_integrator_not_configured", "\(reply.text)")
            #expect(reply.text.contains("PAYWARDEN_PLATFORM_INTEGRATOR_ID"))
            #expect(fixture.apple.webMerchantRequests.isEmpty)
        }
    }

    /// A key with an organisation acts on its organisation's registrations only, and another
    /// organisation's checkout cannot use them for a session.
    @Test func eachOrganisationSeesAndUsesItsOwnRegistrationsOnly() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            try await storeFile(fixture)
            var object: [String: Any] = [
                "partnerInternalMerchantIdentifier": "example-shop", "partnerMerchantName": "Example Shop",
                "domainNames": ["shop.example.com"],
            ]
            let registered = try await server.send(
                .POST, "/v1/apple-pay/web-merchants", body: try body(object), apiKey: fixture.examplePlatformKey)
            #expect(registered.status == 201, "\(registered.text)")
            #expect(try await server.server.database.database.webMerchant(id: "example-shop")?.organization == "example")

            let rivalShow = try await server.send(.GET, Self.path("example-shop"), apiKey: fixture.rivalPlatformKey)
            #expect(rivalShow.status == 404 && rivalShow.errorCode == "web_merchant_not_found", "\(rivalShow.text)")
            let rivalList = try await server.send(.GET, "/v1/apple-pay/web-merchants", apiKey: fixture.rivalPlatformKey)
            #expect(rivalList.status == 200 && !rivalList.text.contains("example-shop"), "\(rivalList.text)")
            let rivalUnregister = try await server.send(
                .POST, Self.path("example-shop") + "/unregister", body: try body(["domainNames": ["shop.example.com"], "reason": "x"]),
                apiKey: fixture.rivalPlatformKey)
            #expect(rivalUnregister.status == 404, "\(rivalUnregister.text)")
            object["partnerMerchantName"] = "Taken Over"
            let rivalRegister = try await server.send(
                .POST, "/v1/apple-pay/web-merchants", body: try body(object), apiKey: fixture.rivalPlatformKey)
            #expect(rivalRegister.status == 404, "\(rivalRegister.text)")
            #expect(fixture.apple.registeredWebMerchant("example-shop")?.partnerMerchantName == "Example Shop")
            // Nor may it register the same domain under an identifier of its own (Paywarden serves the
            // verification file for every host, so Apple's check would pass), or have tokens
            // encrypted to anyone but the integrator.
            let calls = fixture.apple.webMerchantRequests.count
            let rivalDomain = try await server.send(
                .POST, "/v1/apple-pay/web-merchants",
                body: try body([
                    "partnerInternalMerchantIdentifier": "rival-shop", "partnerMerchantName": "Rival", "domainNames": ["SHOP.example.com"],
                ]), apiKey: fixture.rivalPlatformKey)
            #expect(rivalDomain.status == 409 && rivalDomain.errorCode == "web_merchant_domain_taken", "\(rivalDomain.text)")
            let elsewhere = try await server.send(
                .POST, "/v1/apple-pay/web-merchants",
                body: try body([
                    "partnerInternalMerchantIdentifier": "rival-shop", "partnerMerchantName": "Rival", "domainNames": ["rival.example.org"],
                    "encryptTo": "merchant.com.example",
                ]), apiKey: fixture.rivalPlatformKey)
            #expect(
                elsewhere.status == 403 && elsewhere.errorCode == "forbidden" && elsewhere.text.contains("encryptTo"), "\(elsewhere.text)")
            #expect(fixture.apple.webMerchantRequests.count == calls)

            let validationURL = "https://localhost:\(fixture.apple.port)/paymentservices/paymentSession"
            let session = try body([
                "merchantId": "example-shop", "validationURL": validationURL, "displayName": "Example Shop", "initiative": "web",
                "initiativeContext": "shop.example.com",
            ])
            let before = fixture.apple.requests.count
            let rivalSession = try await server.send(.POST, "/v1/apple-pay/payment-session", body: session, apiKey: fixture.rivalSessionKey)
            #expect(rivalSession.status == 403 && rivalSession.errorCode == "merchant_not_authorized", "\(rivalSession.text)")
            #expect(fixture.apple.requests.count == before)
            let ownSession = try await server.send(.POST, "/v1/apple-pay/payment-session", body: session, apiKey: fixture.sessionKey)
            #expect(ownSession.status == 200, "\(ownSession.text)")
        }
    }

    /// Apple's registration API takes the integrator's identity certificate only: configured with a
    /// merchant's identity key instead, the call is made with it and Apple's 401 says what to fix.
    @Test func aMerchantsIdentityCertificateIsRefusedForRegistration() async throws {
        try await withFixture(integrator: Self.merchantID) { fixture in
            try await storeFile(fixture)
            let reply = try await register(fixture, domains: ["shop.example.com"])
            #expect(reply.status == 502 && reply.errorCode == "apple_platform_unauthorized", "\(reply.text)")
            #expect(reply.text.contains("platform integrator identity certificate"), "\(reply.text)")
            let call = try #require(fixture.apple.webMerchantRequests.last)
            #expect(call.clientCertificateDER == fixture.merchantCertificate)
            #expect(fixture.apple.registeredWebMerchant(Self.partnerID) == nil)
            #expect(try await fixture.server.server.database.database.webMerchant(id: Self.partnerID) == nil, "nothing recorded")
        }
    }

    @Test func theDomainVerificationFileIsServedByteExactForAnyHost() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            let path = "/.well-known/apple-developer-merchantid-domain-association"
            let none = try await server.send(.GET, path, apiKey: .some(nil))
            #expect(none.status == 404, "\(none.text)")
            try await storeFile(fixture)
            for host in ["shop.example.com", "pay.merchant.example.org", "127.0.0.1"] {
                let served = try await server.send(.GET, path, apiKey: .some(nil), headers: [("Host", host)])
                #expect(served.status == 200 && served.body == Self.file, "\(host): \(served.status)")
                #expect(served.header("content-type") == "text/plain" && served.header("location") == nil)
            }
            // Replaced byte for byte, and each registration records the file's SHA-256.
            let next = Array("another file\r\n".utf8)
            _ = try await server.server.webMerchantService.storeDomainAssociation(next, user: "test")
            #expect(try await server.send(.GET, path, apiKey: .some(nil)).body == next)
            let registered = try await register(fixture, domains: ["shop.example.com"])
            #expect(try json(registered)["domainAssociationSha256"] as? String == WebMerchantField.sha256Hex(next))
        }
    }

    @Test func aRegisteredMerchantsSessionUsesTheIntegratorsKeyAndItsDomains() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            try await storeFile(fixture)
            #expect(try await register(fixture, domains: ["shop.example.com", "pay.example.com"]).status == 201)
            let validationURL = "https://localhost:\(fixture.apple.port)/paymentservices/paymentSession"
            func session(_ merchant: String, domain: String) throws -> [UInt8] {
                try body([
                    "merchantId": merchant, "validationURL": validationURL, "displayName": "Example Merchant", "initiative": "web",
                    "initiativeContext": domain,
                ])
            }
            let ok = try await server.send(
                .POST, "/v1/apple-pay/payment-session", body: try session(Self.partnerID, domain: "Shop.Example.com"),
                apiKey: fixture.sessionKey)
            #expect(ok.status == 200, "\(ok.text)")
            #expect((try json(ok)["merchantSessionIdentifier"] as? String)?.hasPrefix("SSH") == true)
            let sent = try #require(fixture.apple.requests.last { $0.path == "/paymentservices/paymentSession" })
            #expect(sent.jsonBody?["merchantIdentifier"] as? String == Self.partnerID, "the partner identifier, never the integrator id")
            #expect(sent.jsonBody?["initiativeContext"] as? String == "shop.example.com", "the domain as registered")
            #expect(sent.clientCertificateDER == fixture.integratorCertificate)

            // A domain not registered for it: refused before any call.
            let before = fixture.apple.requests.count
            let wrongDomain = try await server.send(
                .POST, "/v1/apple-pay/payment-session", body: try session(Self.partnerID, domain: "evil.example.net"),
                apiKey: fixture.sessionKey)
            #expect(wrongDomain.status == 403 && wrongDomain.errorCode == "web_merchant_domain_not_registered", "\(wrongDomain.text)")
            // An unregistered domain is no longer usable either.
            _ = try await fixture.server.server.webMerchantService.unregister(
                partnerInternalMerchantIdentifier: Self.partnerID, domainNames: ["pay.example.com"], reason: "moved", user: "test",
                organization: nil)
            let unregistered = try await server.send(
                .POST, "/v1/apple-pay/payment-session", body: try session(Self.partnerID, domain: "pay.example.com"),
                apiKey: fixture.sessionKey)
            #expect(unregistered.status == 403 && unregistered.errorCode == "web_merchant_domain_not_registered", "\(unregistered.text)")
            #expect(fixture.apple.requests.count == before + 1, "only the unregister call reached Apple")
        }
    }

    /// Sends `requests` one after the other, each once the stand-in holds Apple's answer to the one
    /// before, or once that one was answered without reaching Apple; then releases `gate` and
    /// returns the replies in order.
    func racing(_ gate: StandInGate, _ requests: [@Sendable () async throws -> TestServer.Reply]) async throws -> [TestServer.Reply] {
        var tasks: [Task<TestServer.Reply, any Error>] = []
        for request in requests {
            let held = gate.held
            let task = Task { try await request() }
            tasks.append(task)
            let answered = Answered()
            let watcher = Task {
                _ = try? await task.value
                answered.value.withLock { $0 = true }
            }
            let deadline = ContinuousClock.now + .seconds(20)
            while gate.held == held && !answered.value.withLock({ $0 }) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            watcher.cancel()
        }
        gate.release()
        var replies: [TestServer.Reply] = []
        for task in tasks { replies.append(try await task.value) }
        return replies
    }

    final class Answered: Sendable {
        let value = Mutex(false)
    }

    func registration(_ id: String, domains: [String]) throws -> [UInt8] {
        try body(["partnerInternalMerchantIdentifier": id, "partnerMerchantName": "Shop \(id)", "domainNames": domains])
    }

    /// Two organisations register one new partnerInternalMerchantIdentifier at once, Apple's answer
    /// to the first held while the second asks: the identifier stays the first's, the second is
    /// refused without a call to Apple, and the first still sees what it registered.
    @Test func twoOrganisationsRegisteringOneNewIdentifierAtOnceLeaveItWithTheFirst() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            try await storeFile(fixture)
            fixture.sites.serve([fixture.rivalChallenge], at: "rival.example.org")
            let gate = fixture.apple.holdAnswers(toPathsEndingWith: "/paymentservices/registerMerchant")
            let example = try registration("contested-shop", domains: ["shop.example.com"])
            let rival = try registration("contested-shop", domains: ["rival.example.org"])
            let replies = try await racing(
                gate,
                [
                    { try await server.send(.POST, "/v1/apple-pay/web-merchants", body: example, apiKey: fixture.examplePlatformKey) },
                    { try await server.send(.POST, "/v1/apple-pay/web-merchants", body: rival, apiKey: fixture.rivalPlatformKey) },
                ])
            #expect(replies[0].status == 201, "\(replies[0].text)")
            #expect(replies[1].status == 404 && replies[1].errorCode == "web_merchant_not_found", "\(replies[1].text)")
            let registrations = fixture.apple.webMerchantRequests.filter { $0.path == "/paymentservices/registerMerchant" }
            #expect(registrations.count == 1, "Apple was asked \(registrations.count) times")
            #expect(fixture.apple.registeredWebMerchant("contested-shop")?.domainNames == ["shop.example.com"])
            let stored = try await server.server.database.database.webMerchant(id: "contested-shop")
            #expect(stored?.organization == "example" && stored?.domainNames == ["shop.example.com"], "\(String(describing: stored))")
            let shown = try await server.send(.GET, Self.path("contested-shop"), apiKey: fixture.examplePlatformKey)
            #expect(shown.status == 200, "\(shown.text)")
        }
    }

    /// Two identifiers register one domain at once, for two organisations or for one: the database
    /// keeps a domain to one organisation and one web merchant, so the second is refused without a
    /// call to Apple.
    @Test(arguments: [false, true])
    func twoIdentifiersRegisteringOneDomainAtOnceLeaveItWithTheFirst(sameOrganisation: Bool) async throws {
        try await withFixture { fixture in
            let server = fixture.server
            try await storeFile(fixture)
            // A domain both organisations may prove (its owner serves both challenges): the database decides.
            fixture.sites.serve([fixture.exampleChallenge, fixture.rivalChallenge], at: "shared.example.com")
            let gate = fixture.apple.holdAnswers(toPathsEndingWith: "/paymentservices/registerMerchant")
            let first = try registration("first-shop", domains: ["shared.example.com"])
            let second = try registration("second-shop", domains: ["shared.example.com"])
            let replies = try await racing(
                gate,
                [
                    { try await server.send(.POST, "/v1/apple-pay/web-merchants", body: first, apiKey: fixture.examplePlatformKey) },
                    {
                        try await server.send(
                            .POST, "/v1/apple-pay/web-merchants", body: second,
                            apiKey: sameOrganisation ? fixture.platformKey : fixture.rivalPlatformKey)
                    },
                ])
            #expect(replies[0].status == 201, "\(replies[0].text)")
            #expect(replies[1].status == 409 && replies[1].errorCode == "web_merchant_domain_taken", "\(replies[1].text)")
            #expect(fixture.apple.registeredWebMerchant("second-shop") == nil)
            let stored = try await server.server.database.database.webMerchants()
            #expect(stored.filter { $0.domainNames.contains("shared.example.com") }.map(\.id) == ["first-shop"])
            #expect(!stored.contains { $0.id == "second-shop" }, "the refused registration left its reservation")
            let held = try await server.server.database.database.webMerchantDomains(["shared.example.com"])
            #expect(held.map(\.merchantID) == ["first-shop"] && held.map(\.organization) == ["example"], "\(held)")
        }
    }

    /// A domain already pointing its well-known path at Paywarden is not anyone's for the taking:
    /// an organisation's key registers a domain only once the organisation proved it controls it
    /// (its challenge served under the domain), and a domain another organisation holds moves only
    /// by an admin's decision, once no web merchant has it registered.
    @Test func anOrganisationCannotRegisterADomainItHasNotProved() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            try await storeFile(fixture)
            // checkout.example.net serves the organisation example's challenge (its owner): rival may not register it.
            let squatted = try await server.send(
                .POST, "/v1/apple-pay/web-merchants", body: try registration("squatter", domains: ["checkout.example.net"]),
                apiKey: fixture.rivalPlatformKey)
            #expect(squatted.status == 403 && squatted.errorCode == "web_merchant_domain_unproven", "\(squatted.text)")
            #expect(squatted.text.contains("/.well-known/paywarden-domain-challenge"), "\(squatted.text)")
            #expect(fixture.apple.webMerchantRequests.isEmpty, "Apple was asked to register a domain nobody proved")
            #expect(try await server.server.database.database.webMerchant(id: "squatter") == nil, "the refusal left a reservation")
            // Nor with no challenge file at all.
            fixture.sites.serve([], at: "nothing.example.net")
            let unserved = try await server.send(
                .POST, "/v1/apple-pay/web-merchants", body: try registration("squatter", domains: ["nothing.example.net"]),
                apiKey: fixture.rivalPlatformKey)
            #expect(unserved.status == 403 && unserved.text.contains("answered 404"), "\(unserved.text)")

            // The organisation learns its challenge and which domains it holds from the API.
            let listed = try await server.send(.GET, "/v1/apple-pay/web-merchant-domains", apiKey: fixture.rivalPlatformKey)
            #expect(listed.status == 200, "\(listed.text)")
            let challenge = try #require(try json(listed)["challenge"] as? [String: Any])
            #expect(challenge["line"] as? String == fixture.rivalChallenge && challenge["path"] as? String == DomainChallenge.path)
            #expect((try json(listed)["domains"] as? [Any])?.isEmpty == true)

            // The domain's owner serves it for rival too (the checkout really is rival's): registered, the proof recorded.
            fixture.sites.serve([fixture.rivalChallenge], at: "checkout.example.net")
            let proved = try await server.send(
                .POST, "/v1/apple-pay/web-merchants", body: try registration("rival-checkout", domains: ["checkout.example.net"]),
                apiKey: fixture.rivalPlatformKey)
            #expect(proved.status == 201, "\(proved.text)")
            let held = try await server.send(.GET, "/v1/apple-pay/web-merchant-domains", apiKey: fixture.rivalPlatformKey)
            let domains = try #require(try json(held)["domains"] as? [[String: Any]])
            #expect(domains.count == 1 && domains.first?["domain"] as? String == "checkout.example.net", "\(held.text)")
            #expect(domains.first?["proof"] as? String == "challenge" && domains.first?["webMerchant"] as? String == "rival-checkout")

            // Now it is rival's: example's challenge served there again is no claim on it.
            fixture.sites.serve([fixture.exampleChallenge], at: "checkout.example.net")
            let late = try await server.send(
                .POST, "/v1/apple-pay/web-merchants", body: try registration("example-checkout", domains: ["checkout.example.net"]),
                apiKey: fixture.examplePlatformKey)
            #expect(late.status == 409 && late.errorCode == "web_merchant_domain_taken", "\(late.text)")
            #expect(!late.text.contains("rival"), "another organisation's name leaked: \(late.text)")

            // An admin moves it, once no web merchant has it registered.
            let service = server.server.webMerchantService
            await #expect(throws: MerchantTokenFailure.self) {
                _ = try await service.approveDomain("checkout.example.net", organization: "example", user: "admin")
            }
            _ = try await service.unregister(
                partnerInternalMerchantIdentifier: "rival-checkout", domainNames: ["checkout.example.net"], reason: "moved",
                user: "admin", organization: nil)
            let approved = try await service.approveDomain("checkout.example.net", organization: "example", user: "admin")
            #expect(approved.organization == "example" && approved.proof == .admin && approved.merchantID == nil)
            let moved = try await server.send(
                .POST, "/v1/apple-pay/web-merchants", body: try registration("example-checkout", domains: ["checkout.example.net"]),
                apiKey: fixture.examplePlatformKey)
            #expect(moved.status == 201, "\(moved.text)")
            let audit = try AuditLog(path: server.server.configuration.auditLogPath ?? "/nonexistent").records()
            #expect(audit.contains { $0.action == "web-merchants.approve-domain" && $0.result == "ok" })
        }
    }
}
