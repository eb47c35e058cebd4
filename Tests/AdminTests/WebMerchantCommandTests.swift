import Foundation
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// `paywarden web-merchants` as an admin runs it: the platform integrator's identity key made,
/// certified and imported with the `keys` commands like a merchant's (its `platformintegrator.…`
/// id accepted), the domain-verification file stored, and register, show, list and unregister
/// against the stand-in Apple gateway over mutual TLS signed in the HSM, with the refusals made
/// before any call and the audit record each writes.
@Suite(.serialized, .releasesTestResources)
struct WebMerchantCommandTests {
    static let integratorID = "platformintegrator.com.example.cli"
    static let partnerID = "cli-merchant|1;a+b"

    @Test func adminsRegisterWebMerchantsWithTheIntegratorsHSMHeldKey() async throws {
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca)
        let apple = try await AppleGatewayStandIn.start(clientCA: ca.certificate)
        defer { Task { try? await apple.stop() } }
        apple.acceptPlatformIntegrator(Self.integratorID)

        let created = try env.paywarden(
            "keys", "create", "--merchant-id", Self.integratorID, "--purpose", "identity", "--csr-out", env.home + "/integrator.csr")
        #expect(created.status == 0, "\(created.stderr)")
        let csr = try String(contentsOfFile: env.home + "/integrator.csr", encoding: .utf8)
        #expect(csr.contains("BEGIN CERTIFICATE REQUEST"))
        let certificate = try ca.issue(csrPEM: csr, merchantID: Self.integratorID, purpose: .identity)
        let imported = try env.paywarden("keys", "import-certificate", try env.write(certificate, named: "integrator.cer"))
        #expect(imported.status == 0, "\(imported.stderr)")
        let listed = try env.listedKeys()
        #expect(listed.contains { $0.merchantId == Self.integratorID && $0.purpose == "identity" && $0.state == "active" }, "\(listed)")

        let gateway = [
            "PAYWARDEN_APPLE_PAY_GATEWAY": apple.baseURL.absoluteString,
            "PAYWARDEN_APPLE_PAY_GATEWAY_CA": try apple.writeServerCA(to: env.home),
            "PAYWARDEN_MERCHANT_VALIDATION_HOSTS": "localhost:\(apple.port)",
            "PAYWARDEN_PLATFORM_INTEGRATOR_ID": Self.integratorID,
        ]
        let fileBytes = Array("domain verification\n".utf8) + [0x00, 0xFE]
        let stored = try env.paywarden(
            "web-merchants", "domain-association", try env.write(fileBytes, named: "apple-developer-merchantid-domain-association"),
            "--json", environment: gateway)
        #expect(stored.status == 0, "\(stored.stderr)")

        let registered = try env.paywarden(
            "web-merchants", "register", "--id", Self.partnerID, "--name", "CLI Merchant", "--organization", "example", "--domain",
            "shop.example.com", "--domain",
            "pay.example.com", "--json", environment: gateway)
        #expect(registered.status == 0, "\(registered.stderr)")
        let record = try JSONSerialization.jsonObject(with: Data(registered.stdout.utf8)) as? [String: Any]
        #expect(record?["domainNames"] as? [String] == ["shop.example.com", "pay.example.com"], "\(registered.stdout)")
        #expect(record?["encryptTo"] as? String == Self.integratorID)
        let call = try #require(apple.webMerchantRequests.last)
        #expect(call.clientCertificateDER == certificate, "the integrator's identity certificate authenticated the call")

        let shown = try env.paywarden("web-merchants", "show", "--id", Self.partnerID, environment: gateway)
        #expect(shown.status == 0 && shown.stdout.contains("encryptTo: matches"), "\(shown.stdout) \(shown.stderr)")
        let list = try env.paywarden("web-merchants", "list", "--json", environment: gateway)
        #expect(list.status == 0 && list.stdout.contains(Self.partnerID), "\(list.stdout)")

        // Refused before any call: 100 domains, a bad identifier; exit status 1.
        let calls = apple.webMerchantRequests.count
        var tooMany = ["web-merchants", "register", "--id", "many-domains", "--name", "Many", "--organization", "example"]
        for n in 1...100 { tooMany += ["--domain", "d\(n).example.com"] }
        var cli = env.cli
        cli.environment.merge(gateway) { $1 }
        let refused = try cli.run(tooMany, input: nil)
        #expect(refused.status == 1 && refused.stderr.contains("invalid_request"), "\(refused.stderr)")
        let badID = try env.paywarden(
            "web-merchants", "register", "--id", "no", "--name", "x", "--organization", "example", "--domain", "a.example.com",
            environment: gateway)
        #expect(badID.status == 1 && badID.stderr.contains("partnerInternalMerchantIdentifier"), "\(badID.stderr)")
        #expect(apple.webMerchantRequests.count == calls)

        let unregistered = try env.paywarden(
            "web-merchants", "unregister", "--id", Self.partnerID, "--domain", "shop.example.com", "--domain", "pay.example.com",
            "--reason", "closed", "--json", environment: gateway)
        #expect(unregistered.status == 0 && unregistered.stdout.contains("\"deleted\""), "\(unregistered.stdout) \(unregistered.stderr)")

        // The admin vouched for both domains: they are the organisation's, free again once unregistered.
        let domains = try env.paywarden("web-merchants", "domains", "--json", environment: gateway)
        let held = try #require(try JSONSerialization.jsonObject(with: Data(domains.stdout.utf8)) as? [[String: Any]], "\(domains.stderr)")
        #expect(held.map { $0["domain"] as? String } == ["pay.example.com", "shop.example.com"], "\(held)")
        #expect(held.allSatisfy { $0["organization"] as? String == "example" && $0["proof"] as? String == "admin" })
        #expect(held.allSatisfy { $0["webMerchant"] == nil }, "\(held)")
        // Another organisation gets a domain only from an admin, and the domain moves.
        let refusedElsewhere = try env.paywarden(
            "web-merchants", "register", "--id", "other-merchant", "--name", "Other", "--organization", "rival", "--domain",
            "shop.example.com", environment: gateway)
        #expect(refusedElsewhere.status == 1 && refusedElsewhere.stderr.contains("web_merchant_domain_taken"), "\(refusedElsewhere.stderr)")
        let approved = try env.paywarden(
            "web-merchants", "approve-domain", "--domain", "SHOP.example.com", "--organization", "rival", "--json", environment: gateway)
        #expect(approved.status == 0 && approved.stdout.contains("\"rival\""), "\(approved.stdout) \(approved.stderr)")
        let badDomain = try env.paywarden(
            "web-merchants", "approve-domain", "--domain", "https://shop.example.com", "--organization", "rival", environment: gateway)
        #expect(badDomain.status == 1 && badDomain.stderr.contains("not a fully qualified domain name"), "\(badDomain.stderr)")

        var noIntegrator = gateway
        noIntegrator["PAYWARDEN_PLATFORM_INTEGRATOR_ID"] = nil
        let misconfigured = try env.paywarden("web-merchants", "show", "--id", Self.partnerID, environment: noIntegrator)
        #expect(misconfigured.status == 3 && misconfigured.stderr.contains("PAYWARDEN_PLATFORM_INTEGRATOR_ID"), "\(misconfigured.stderr)")

        let audit = try env.audit().filter { $0.action.hasPrefix("web-merchants.") }
        #expect(
            audit.map(\.action) == [
                "web-merchants.domain-association", "web-merchants.register", "web-merchants.show", "web-merchants.list",
                "web-merchants.register", "web-merchants.register", "web-merchants.unregister", "web-merchants.domains",
                "web-merchants.register", "web-merchants.approve-domain", "web-merchants.approve-domain", "web-merchants.show",
            ], "\(audit.map(\.action))")
    }
}
