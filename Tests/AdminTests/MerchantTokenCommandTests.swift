import Foundation
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// `paywarden merchant-tokens` as an admin runs it: the identity key made and certified with the
/// CLI, calls to the stand-in Apple gateway over mutual TLS signed in the HSM, what each refusal
/// says and its exit status, and the audit record each writes.
@Suite(.serialized, .releasesTestResources)
struct MerchantTokenCommandTests {
    static let merchantID = "merchant.com.example.cli"

    @Test func adminsCallAppleWithTheHSMHeldIdentityKey() async throws {
        let ca = try TestCertificateAuthority()
        let env = try await AdminTestEnvironment.make(trusting: ca)
        let apple = try await AppleGatewayStandIn.start(clientCA: ca.certificate)
        defer { Task { try? await apple.stop() } }

        let created = try env.paywarden(
            "keys", "create", "--merchant-id", Self.merchantID, "--purpose", "identity", "--csr-out", env.home + "/identity.csr")
        #expect(created.status == 0, "\(created.stderr)")
        let csr = try String(contentsOfFile: env.home + "/identity.csr", encoding: .utf8)
        let certificate = try ca.issue(csrPEM: csr, merchantID: Self.merchantID, purpose: .identity)
        let imported = try env.paywarden("keys", "import-certificate", try env.write(certificate, named: "merchant_id.cer"))
        #expect(imported.status == 0, "\(imported.stderr)")

        let gateway = [
            "PAYWARDEN_APPLE_PAY_GATEWAY": apple.baseURL.absoluteString,
            "PAYWARDEN_APPLE_PAY_GATEWAY_CA": try apple.writeServerCA(to: env.home),
            "PAYWARDEN_MERCHANT_VALIDATION_HOSTS": "localhost:\(apple.port)",
        ]
        let events = try env.paywarden("merchant-tokens", "events", "--json", environment: gateway)
        #expect(events.status == 0, "\(events.stderr)")
        #expect((try JSONSerialization.jsonObject(with: Data(events.stdout.utf8)) as? [Any])?.isEmpty == true, "\(events.stdout)")

        let unlinked = try env.paywarden(
            "merchant-tokens", "unlink", "--merchant-id", Self.merchantID, "--token-id", "MT-CLI-1", environment: gateway)
        #expect(unlinked.status == 0, "\(unlinked.stderr)")
        #expect(unlinked.stdout.contains("unlinked at Apple"))
        let call = try #require(apple.requests.first { $0.path.hasSuffix("/merchantId/\(Self.merchantID)/merchantToken/unlink") })
        #expect(call.jsonBody?["merchantTokenIdentifier"] as? String == "MT-CLI-1")
        #expect(call.clientCertificateDER == certificate, "the identity certificate authenticated the call")

        let url = "https://merchant.example/v1/apple-pay/\(Self.merchantID)"
        let updated = try env.paywarden(
            "merchant-tokens", "update-url", "--merchant-id", Self.merchantID, "--token-id", "MT-CLI-1", "--url", url,
            environment: gateway)
        #expect(updated.status == 0, "\(updated.stderr)")

        // What fails says what was wrong, with the exit status of its kind.
        let unknownEvent = try env.paywarden("merchant-tokens", "retry", "evt-unknown", environment: gateway)
        #expect(unknownEvent.status == 1 && unknownEvent.stderr.contains("no merchant-token event evt-unknown"), "\(unknownEvent.stderr)")
        let noIdentity = try env.paywarden(
            "merchant-tokens", "unlink", "--merchant-id", "merchant.com.other", "--token-id", "MT-CLI-1", environment: gateway)
        #expect(noIdentity.status == 1 && noIdentity.stderr.contains("identity_unavailable"), "\(noIdentity.stderr)")
        var elsewhere = gateway
        elsewhere["PAYWARDEN_APPLE_PAY_GATEWAY"] = "https://gateway.example.net"
        let misconfigured = try env.paywarden("merchant-tokens", "events", environment: elsewhere)
        #expect(misconfigured.status == 3 && misconfigured.stderr.contains("PAYWARDEN_APPLE_PAY_GATEWAY"), "\(misconfigured.stderr)")
        try await apple.stop()
        let down = try env.paywarden(
            "merchant-tokens", "unlink", "--merchant-id", Self.merchantID, "--token-id", "MT-CLI-2", environment: gateway)
        #expect(down.status == 4 && down.stderr.contains("upstream_unavailable"), "\(down.stderr)")

        let audit = try env.audit().filter { $0.action.hasPrefix("merchant-tokens.") }
        #expect(
            audit.map(\.action) == [
                "merchant-tokens.events", "merchant-tokens.unlink", "merchant-tokens.update-url", "merchant-tokens.retry",
                "merchant-tokens.unlink", "merchant-tokens.events", "merchant-tokens.unlink",
            ])
        #expect(audit.map(\.result) == ["ok", "ok", "ok", "refused", "refused", "failed", "failed"], "\(audit)")
        let logged = (try? String(contentsOfFile: env.home + "/audit/audit.jsonl", encoding: .utf8)) ?? ""
        #expect(logged.contains("MT-CLI-1") && !logged.contains(url))
    }
}
