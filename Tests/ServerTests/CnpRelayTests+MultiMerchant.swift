import Foundation
import PaywardenServer
import PaywardenTesting
import ProcessorRelays
import Testing

/// Multi-merchant payments through the cnpAPI relay and the vault's HTTP routes: the redemption
/// answers each entry of `authenticationResponses`, and a relay sends the cryptogram of the entry
/// its `Paywarden-Submerchant` header names, refusing a request that names none or an unknown one.
extension CnpRelayTests {
    @Test func aMultiMerchantApplePaySaleCarriesTheNamedEntrysCryptogram() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922391006"
            let token = try server.ecToken(payload: PaymentPayloads.multiMerchant(pan: pan))
            let body = CnpTestMessages.envelope(.cnp, password: server.vaultKey, try CnpTestMessages.applePay(token: token))

            // A header that could name no entry is refused before the token is decrypted: the same
            // token still relays afterwards.
            let malformed = try await server.send(
                .POST, "/vap/communicator/online", body: body, apiKey: .some(nil), contentType: "text/xml",
                headers: [("Paywarden-Submerchant", "not valid")])
            #expect(malformed.text.contains("Paywarden-Submerchant"), "\(malformed.text)")
            #expect(upstream.received.isEmpty)

            let car = PaymentPayloads.submerchants[2]
            let reply = try await server.send(
                .POST, "/vap/communicator/online", body: body, apiKey: .some(nil), contentType: "text/xml",
                headers: [("Paywarden-Submerchant", car.merchantIdentifier)])
            #expect(reply.status == 200 && element("response", in: reply.text) == "000", "\(reply.text)")
            let received = try #require(upstream.received.first)
            #expect(upstream.received.count == 1 && received.accountNumber == pan && received.cryptogram == car.cryptogram)
            for entry in PaymentPayloads.submerchants {
                #expect(!reply.text.contains(entry.cryptogram) && !server.logs.text.contains(entry.cryptogram))
            }
        }
    }

    @Test func aMultiMerchantRegistrationRelayedWithoutAChoiceIsDeclinedAndStaysLive() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let id = try await server.registerThroughEProtect(payload: PaymentPayloads.multiMerchant(pan: "4457119922391006"))
            let body = CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: id))
            let declined = try await post(server, body)
            // A validation error of the envelope, as cnpAPI answers a request it cannot process.
            #expect(declined.text.contains("(submerchant_required)") && declined.text.contains("Paywarden-Submerchant"), "\(declined.text)")
            #expect(upstream.received.isEmpty)

            let hotel = PaymentPayloads.submerchants[1]
            let relayed = try await server.send(
                .POST, "/vap/communicator/online", body: body, apiKey: .some(nil), contentType: "text/xml",
                headers: [("Paywarden-Submerchant", hotel.merchantIdentifier)])
            #expect(element("response", in: relayed.text) == "000", "\(relayed.text)")
            #expect(upstream.received.count == 1 && upstream.received.first?.cryptogram == hotel.cryptogram)
        }
    }

    @Test func theRedemptionAnswersEveryEntryAndTheDecryptEndpointRefusesEntriesItCannotRelyOn() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            let id = try await server.registerThroughEProtect(payload: PaymentPayloads.multiMerchant())
            let redeemed = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: .some(server.vaultKey))
            #expect(redeemed.status == 200, "\(redeemed.text)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(redeemed.body)) as? [String: Any])
            let entries = try #require(object["authenticationResponses"] as? [[String: String]])
            #expect(entries.map { $0["merchantIdentifier"] } == PaymentPayloads.submerchants.map(\.merchantIdentifier))
            #expect(entries.map { $0["authenticationData"] } == PaymentPayloads.submerchants.map(\.cryptogram))
            #expect(entries.map { $0["transactionAmount"] } == PaymentPayloads.submerchants.map(\.amount))

            let single = try await server.registerThroughEProtect(payload: PaymentPayloads.threeDSecure())
            let plain = try await server.send(.POST, "/v1/registrations/\(single)/redeem", apiKey: .some(server.vaultKey))
            #expect(plain.text.contains(#""authenticationResponses":[]"#), "\(plain.text)")

            let over = PaymentPayloads.multiMerchant(transactionAmount: "100")
            let refused = try await server.send(body: try server.ecToken(payload: over), apiKey: .some(server.decryptKey))
            #expect(refused.status == 422 && refused.text.contains(#""code":"authentication_responses_invalid""#), "\(refused.text)")
            #expect(!refused.text.contains(PaymentPayloads.submerchants[0].cryptogram))
        }
    }
}
