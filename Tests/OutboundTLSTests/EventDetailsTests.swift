import Foundation
import OutboundTLS
import PaywardenTestTraits
import PaywardenTesting
import Testing

@Suite(.serialized, .releasesTestResources)
struct EventDetailsTests {
    let merchant = GatewayFixture.merchantID

    /// Every event type Apple documents, and one it may add, fetched over mutual TLS.
    @Test func everyEventTypeIsParsed() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        let card = StandInTokenMetadata(cardMetadata: [
            "cardCountry": "US", "expirationDate": "12/2029", "fpanSuffix": "4242", "longDescription": "Visa Signature ending in 4242",
            "shortDescription": "Visa",
        ])
        let art = StandInTokenMetadata(cardArt: [
            ["name": "front", "type": "image/png", "url": "https://cdn.example.com/art/front.png"],
            ["name": "back", "type": "image/png", "url": "https://cdn.example.com/art/back.png"],
        ])
        let standIn = fixture.standIn
        standIn.setEvent("e-unlink", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: "MT-1", reason: "Removed by user"))
        standIn.setEvent("e-meta", merchantID: merchant, .event(type: "UPDATED_METADATA", merchantTokenID: "MT-2", metadata: card))
        standIn.setEvent("e-art", merchantID: merchant, .event(type: "UPDATED_CARD_ART", merchantTokenID: "MT-3", metadata: art))
        standIn.setEvent("e-key", merchantID: merchant, .event(type: "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY", merchantTokenID: "MT-4"))
        standIn.setEvent("e-new", merchantID: merchant, .event(type: "SUSPENDED_BY_ISSUER", merchantTokenID: "MT-5", reason: nil))

        let events = try await fixture.withClient { client in
            var events: [String: MerchantTokenEventDetails] = [:]
            for id in ["e-unlink", "e-meta", "e-art", "e-key", "e-new"] {
                events[id] = try await client.merchantTokenEvent(merchantID: merchant, eventID: id)
            }
            return events
        }
        let unlink = try #require(events["e-unlink"])
        #expect(unlink.kind == .unlink && unlink.merchantTokenIdentifier == "MT-1" && unlink.reason == "Removed by user")
        #expect(unlink.metadata == nil && unlink.metadataJSON == nil)
        #expect(
            String(decoding: unlink.recordedJSON, as: UTF8.self)
                == #"{"eventType":"UNLINK","merchantTokenIdentifier":"MT-1","reason":"Removed by user"}"#)

        let metadata = try #require(events["e-meta"])
        #expect(metadata.kind == .updatedMetadata)
        #expect(metadata.metadata?.cardMetadata?.expirationDate == "12/2029")
        #expect(metadata.metadata?.cardMetadata?.fpanSuffix == "4242")
        #expect(metadata.metadata?.cardArt == nil)
        #expect(
            String(decoding: try #require(metadata.metadataJSON), as: UTF8.self)
                == #"{"cardMetadata":{"cardCountry":"US","expirationDate":"12/2029","fpanSuffix":"4242","#
                + #""longDescription":"Visa Signature ending in 4242","shortDescription":"Visa"}}"#)

        let cardArt = try #require(events["e-art"])
        #expect(cardArt.kind == .updatedCardArt)
        #expect(cardArt.metadata?.cardArt?.map(\.url) == ["https://cdn.example.com/art/front.png", "https://cdn.example.com/art/back.png"])
        #expect(
            String(decoding: try #require(cardArt.metadataJSON), as: UTF8.self).contains(#""url":"https://cdn.example.com/art/back.png""#))

        #expect(events["e-key"]?.kind == .updatedPublicKey)
        let unknown = try #require(events["e-new"])
        #expect(unknown.kind == .other && unknown.eventType == "SUSPENDED_BY_ISSUER" && unknown.reason == nil)
        #expect(fixture.standIn.requests.count == 5)
    }

    /// Unknown top-level fields are ignored and never recorded; nulls count as absent.
    @Test func unknownFieldsAreDropped() throws {
        let details = try MerchantTokenEventDetails(
            json: Array(
                #"{"eventType":"UNLINK","merchantTokenIdentifier":"MT-1","reason":null,"extra":{"a":1},"merchantTokenMetadata":null}"#.utf8)
        )
        #expect(details.reason == nil && details.metadata == nil)
        #expect(String(decoding: details.recordedJSON, as: UTF8.self) == #"{"eventType":"UNLINK","merchantTokenIdentifier":"MT-1"}"#)
    }

    @Test(arguments: [
        ("not json", "not a JSON object"),
        ("[]", "not a JSON object"),
        (#"{"merchantTokenIdentifier":"MT-1"}"#, "eventType is missing"),
        (#"{"eventType":"unlink","merchantTokenIdentifier":"MT-1"}"#, "[A-Z0-9_]"),
        (#"{"eventType":7,"merchantTokenIdentifier":"MT-1"}"#, "eventType is not a string"),
        (#"{"eventType":"\#(String(repeating: "A", count: 65))","merchantTokenIdentifier":"MT-1"}"#, "longer than 64"),
        (#"{"eventType":"UNLINK"}"#, "merchantTokenIdentifier is missing"),
        (#"{"eventType":"UNLINK","merchantTokenIdentifier":""}"#, "merchantTokenIdentifier is empty"),
        (#"{"eventType":"UNLINK","merchantTokenIdentifier":"\#(String(repeating: "M", count: 65))"}"#, "longer than 64"),
        (#"{"eventType":"UNLINK","merchantTokenIdentifier":"MT 1"}"#, "printable"),
        (#"{"eventType":"UNLINK","merchantTokenIdentifier":"MT-1","reason":"\#(String(repeating: "r", count: 257))"}"#, "reason"),
        (#"{"eventType":"UNLINK","merchantTokenIdentifier":"MT-1","merchantTokenMetadata":[]}"#, "not an object"),
        (
            withMetadata("UPDATED_METADATA", #"{"cardMetadata":{"fpanSuffix":"42424"}}"#),
            "fpanSuffix"
        ),
        (
            withMetadata("UPDATED_METADATA", #"{"cardMetadata":{"fpanSuffix":"42a4"}}"#),
            "fpanSuffix is not digits"
        ),
        (
            withMetadata("UPDATED_METADATA", #"{"cardMetadata":{"expirationDate":"2029-12-31"}}"#),
            "expirationDate"
        ),
        (
            withMetadata("UPDATED_CARD_ART", #"{"cardArt":[{"url":"http://x.example/a.png"}]}"#),
            "https"
        ),
        (
            withMetadata("UPDATED_CARD_ART", #"{"cardArt":[{"name":"front"}]}"#),
            "url is missing"
        ),
        (
            withMetadata(
                "UPDATED_CARD_ART",
                #"{"cardArt":[\#(Array(repeating: #"{"url":"https://a.example/x"}"#, count: 17).joined(separator: ","))]}"#),
            "more than 16"
        ),
    ])
    func outOfBoundsBodiesAreRefused(body: String, why: String) {
        let error = #expect(throws: AppleGatewayError.self) { _ = try MerchantTokenEventDetails(json: Array(body.utf8)) }
        #expect(error?.code == .responseInvalid)
        #expect(error?.message.contains(why) == true, "\(error?.message ?? "")")
    }

    /// Through the gateway: an out-of-bounds body and one larger than the cap.
    @Test func outOfBoundsAnswersAreRefused() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        fixture.standIn.setEvent("e-long", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: String(repeating: "M", count: 65)))
        let huge = #"{"eventType":"UNLINK","merchantTokenIdentifier":"MT-1","padding":""# + String(repeating: "x", count: 70_000) + "\"}"
        fixture.standIn.setEvent("e-huge", merchantID: merchant, .json(huge))
        fixture.standIn.setEvent("e-html", merchantID: merchant, .json("<html>maintenance</html>"))
        let errors = try await fixture.withClient { client in
            var errors: [AppleGatewayError?] = []
            for id in ["e-long", "e-huge", "e-html"] {
                errors.append(await gatewayError { _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: id) })
            }
            return errors
        }
        #expect(errors.map { $0?.code } == Array(repeating: AppleGatewayError.Code.responseInvalid, count: 3))
        #expect(errors[1]?.message.contains("larger than 65536 bytes") == true)
        #expect(errors.allSatisfy { $0?.isRetryable == false })
    }
}

/// An event body of `type` with `metadata` (JSON text) as its merchantTokenMetadata.
private func withMetadata(_ type: String, _ metadata: String) -> String {
    #"{"eventType":"\#(type)","merchantTokenIdentifier":"MT-1","merchantTokenMetadata":\#(metadata)}"#
}
