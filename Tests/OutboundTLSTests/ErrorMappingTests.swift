import Foundation
import OutboundTLS
import PaywardenTestTraits
import PaywardenTesting
import Testing

@Suite(.serialized, .releasesTestResources)
struct ErrorMappingTests {
    let merchant = GatewayFixture.merchantID

    @Test func statusesMapToWhatTheCallerDoes() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        let standIn = fixture.standIn
        standIn.setEvent("e-ok", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: "MT-1"))
        let longMessage = "Bad\nrequest\u{1}: " + String(repeating: "m", count: 400)
        standIn.setEvent("e-400", merchantID: merchant, .error(status: 400, statusCode: "400", message: longMessage, subStatusCode: "E42"))
        standIn.setEvent("e-403", merchantID: merchant, .error(status: 403, message: "Forbidden"))

        try await fixture.withClient { client in
            let fetch = { (id: String) async -> AppleGatewayError? in
                await gatewayError { _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: id) }
            }
            // 500: Apple is down for now: retry later.
            standIn.failNext(1, status: 500)
            let serverError = await fetch("e-ok")
            #expect(serverError?.code == .upstreamUnavailable)
            #expect(serverError?.appleStatus == 500)
            #expect(serverError?.isRetryable == true)
            #expect(await fetch("e-ok") == nil, "the failure was one request only")
            for status in [502, 503, 408, 429] {
                standIn.failNext(1, status: status)
                let error = await fetch("e-ok")
                #expect(error?.code == .upstreamUnavailable && error?.appleStatus == status && error?.isRetryable == true)
            }

            // 400 ErrorResponse: refused, with Apple's message sanitised and truncated.
            let refused = try #require(await fetch("e-400"))
            #expect(refused.code == .appleRefused && refused.appleStatus == 400 && !refused.isRetryable)
            #expect(refused.message.contains("statusCode 400, subStatusCode E42"))
            #expect(refused.message.contains("Badrequest: mmm"))
            #expect(!refused.message.contains("\n") && !refused.message.contains("\u{1}"))
            #expect(refused.message.contains(String(repeating: "m", count: 200)))
            #expect(!refused.message.contains(String(repeating: "m", count: 260)))
            #expect(await fetch("e-403")?.code == .appleRefused)

            // 404 on an event fetch: Apple does not know the event (or the seven days are over).
            let missing = await fetch("e-unknown")
            #expect(missing?.code == .eventNotFound && missing?.appleStatus == 404 && missing?.isRetryable == false)
        }
    }

    /// A redirect is an answer, never followed: its target is never requested.
    @Test func redirectsAreNeverFollowed() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        let target = "/paymentservices/v1/merchantId/\(merchant)/merchantToken/event/e-target"
        fixture.standIn.setEvent("e-target", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: "MT-1"))
        fixture.standIn.setEvent("e-ok", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: "MT-1"))
        fixture.standIn.redirectNext(1, to: fixture.standIn.baseURL.absoluteString + target)
        let error = try await fixture.withClient { client in
            await gatewayError { _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: "e-ok") }
        }
        #expect(error?.code == .appleRefused)
        #expect(error?.appleStatus == 302)
        #expect(error?.message.contains("redirect") == true)
        #expect(fixture.standIn.requests.count == 1)
        #expect(!fixture.standIn.requests.contains { $0.path == target })
    }

    /// The gateway down (nothing listening, open connections dropped), then back on the same port.
    @Test func aStoppedGatewayIsUpstreamUnavailableUntilItReturns() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        fixture.standIn.setEvent("e-ok", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: "MT-1"))
        try await fixture.withClient { client in
            _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: "e-ok")
            try await fixture.standIn.stop()
            let down = await gatewayError { _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: "e-ok") }
            #expect(down?.code == .upstreamUnavailable)
            #expect(down?.appleStatus == nil)
            #expect(down?.isRetryable == true)
            try await fixture.standIn.restart()
            let details = try await client.merchantTokenEvent(merchantID: merchant, eventID: "e-ok")
            #expect(details.kind == .unlink)
        }
        #expect(fixture.standIn.requests.count == 2)
    }

    /// Identifiers that would change the URL's path are refused before anything is sent.
    @Test func pathComponentsAreValidated() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        try await fixture.withClient { client in
            for eventID in ["..", "a/b", "e?x=1", "", "e%2F", String(repeating: "e", count: 129)] {
                let error = await gatewayError { _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: eventID) }
                #expect(error?.code == .invalidRequest, "\(eventID)")
            }
            let error = await gatewayError { _ = try await client.merchantTokenEvent(merchantID: "merchant/../x", eventID: "e") }
            #expect(error?.code == .invalidRequest)
        }
        #expect(fixture.standIn.requests.isEmpty)
    }
}
