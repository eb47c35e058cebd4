import Foundation
import PaywardenServer
import PaywardenTesting
import Testing

/// Radial's decrypt sequence for a multi-merchant payment: `decryptblob` holds the whole payload,
/// and the `DW.xml` authorisation with the token names its entry in `Paywarden-Submerchant`.
extension RadialRelayTests {
    @Test func theHeldMultiMerchantPaymentAuthorizesWithTheEntryTheTokensRequestNames() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922390446"
            let airline = PaymentPayloads.submerchants[0]
            let token = try await decryptedToken(server, payload: PaymentPayloads.multiMerchant(pan: pan))
            let reply = try await server.send(
                .POST, Self.authorizationPath, body: RadialTestMessages.tokenAuthorization(token), apiKey: .some(Self.app.key),
                contentType: "application/xml",
                headers: [("Paywarden-Submerchant", airline.merchantIdentifier)])
            #expect(reply.status == 200 && element("ResponseCode", in: reply.text) == "APPROVED", "\(reply.status) \(reply.text)")
            let received = try #require(upstream.receivedRadial.first)
            #expect(received.accountNumber == pan && received.cryptogram == airline.cryptogram && received.eci == "7")
            #expect(RelayFixture.cardDataIn(reply.text, accountNumber: pan, cryptogram: airline.cryptogram).isEmpty, "\(reply.text)")
        }
    }

    /// Without the header, or naming an entry the payment lacks, the authorisation is refused with
    /// nothing sent and the payload still held: the entry is chosen before the take.
    @Test func aHeldMultiMerchantPaymentWithoutAChoiceIsRefusedAndStaysHeld() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let token = try await decryptedToken(server, payload: PaymentPayloads.multiMerchant(pan: "4457119922390446"))
            let reply = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(token))
            #expect(reply.status == 422 && element("Code", in: reply.text) == "TOKEN_NOT_ACCEPTED", "\(reply.text)")
            #expect(element("Description", in: reply.text)?.hasPrefix("submerchant_required: ") == true, "\(reply.text)")
            let unknown = try await server.send(
                .POST, Self.authorizationPath, body: RadialTestMessages.tokenAuthorization(token), apiKey: .some(Self.app.key),
                contentType: "application/xml",
                headers: [("Paywarden-Submerchant", String(repeating: "e", count: 64))])
            #expect(element("Description", in: unknown.text)?.hasPrefix("submerchant_not_found: ") == true, "\(unknown.text)")
            #expect(upstream.receivedRadial.isEmpty)

            let car = PaymentPayloads.submerchants[2]
            let used = try await server.send(
                .POST, Self.authorizationPath, body: RadialTestMessages.tokenAuthorization(token), apiKey: .some(Self.app.key),
                contentType: "application/xml",
                headers: [("Paywarden-Submerchant", car.merchantIdentifier.uppercased())])
            #expect(used.status == 200 && upstream.receivedRadial.first?.cryptogram == car.cryptogram, "\(used.text)")
        }
    }
}
