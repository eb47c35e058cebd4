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
                .POST, Self.authorizationPath, body: tokenAuthorization(token), apiKey: .some(Self.app.key), contentType: "application/xml",
                headers: [("Paywarden-Submerchant", airline.merchantIdentifier)])
            #expect(reply.status == 200 && element("ResponseCode", in: reply.text) == "APPROVED", "\(reply.status) \(reply.text)")
            let received = try #require(upstream.receivedRadial.first)
            #expect(received.accountNumber == pan && received.cryptogram == airline.cryptogram && received.eci == "7")
            #expect(RelayFixture.cardDataIn(reply.text, accountNumber: pan, cryptogram: airline.cryptogram).isEmpty, "\(reply.text)")
        }
    }

    /// Without the header the held payload was taken before its entries could be read: the
    /// authorisation is refused with nothing sent, and the held cryptograms are spent (docs/processors.md).
    @Test func aHeldMultiMerchantPaymentWithoutAChoiceIsRefusedWithNothingSent() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let token = try await decryptedToken(server, payload: PaymentPayloads.multiMerchant(pan: "4457119922390446"))
            let reply = try await post(server, Self.authorizationPath, tokenAuthorization(token))
            #expect(reply.status == 422 && element("Code", in: reply.text) == "TOKEN_NOT_ACCEPTED", "\(reply.text)")
            #expect(element("Description", in: reply.text)?.hasPrefix("submerchant_required: ") == true, "\(reply.text)")
            #expect(upstream.receivedRadial.isEmpty)
        }
    }
}
