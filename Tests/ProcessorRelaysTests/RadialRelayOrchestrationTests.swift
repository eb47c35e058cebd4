import Foundation
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import ProcessorMessages
import ProcessorRelays
import Testing
import Vault

/// The Radial relay's orchestration without a socket, on both HSMs: `decryptblob` answered here,
/// the authorisation with its token or a wallet relayed to the upstream answered in process by the
/// stand-in's own logic (``RelayTestVault``, ``InProcessProcessorUpstream``). The live
/// `RadialRelayTests` run the flows over HTTPS through the server.
@Suite(.serialized, .releasesTestResources)
struct RadialRelayOrchestrationTests {
    static let organization = RelayTestVault.organization
    static let pan = "4457119922391006"

    struct Environment: Sendable {
        let vault: RelayTestVault
        let upstream: InProcessProcessorUpstream
        let relay: RadialRelay

        func decryptBlob(_ payload: [UInt8]) async throws -> (text: String, status: Int) {
            let request = try RadialDecryptBlobRequest.parse(RadialTestMessages.decryptBlobRequest(try vault.applePayToken(payload)))
            let reply = await relay.decryptBlob(request, organization: RadialRelayOrchestrationTests.organization)
            return (String(decoding: ProcessorXML.serialize(reply.document), as: UTF8.self), Int(reply.status.code))
        }

        func authorize(_ body: [UInt8], key: APIKey? = nil, storeID: String = "TMSUS") async throws -> (text: String, status: Int) {
            let reply = await relay.authorize(
                try RadialCreditCardAuthRequest.parse(body), storeID: storeID, key: key ?? vault.key,
                organization: RadialRelayOrchestrationTests.organization)
            return (String(decoding: ProcessorXML.serialize(reply.document), as: UTF8.self), Int(reply.status.code))
        }
    }

    func withEnvironment(_ body: (Environment) async throws -> Void) async throws {
        try await RelayTestVault.with { vault in
            let upstream = InProcessProcessorUpstream(format: .radial)
            let relay = RadialRelay(
                service: vault.service, upstream: upstream, storeIDs: [Self.organization: ["TMSUS"]], apiKey: nil,
                logger: vault.service.logger)
            try await body(Environment(vault: vault, upstream: upstream, relay: relay))
        }
    }

    /// Seed 003's sequence: decryptblob answers the token (never the DPAN or cryptogram); the first
    /// authorisation with it sends the held card and cryptogram; the second, a stored credential
    /// of a DPAN, is refused (cryptogram_required) with nothing sent.
    @Test func decryptBlobsTokenAuthorizesOnceWithTheHeldCryptogram() async throws {
        try await withEnvironment { environment in
            let answered = try await environment.decryptBlob(PaymentPayloads.threeDSecure(pan: Self.pan))
            #expect(answered.status == 200 && !answered.text.contains(Self.pan) && !answered.text.contains(RelayTestVault.cryptogram))
            let token = try #require(element("PaymentAccountUniqueId", in: answered.text), "\(answered.text)")
            #expect(element("TenderType", in: answered.text) == "VC" && element("ExpirationDate", in: answered.text) == "2029-12")

            let first = try await environment.authorize(RadialTestMessages.tokenAuthorization(token))
            #expect(first.status == 200 && first.text.contains(token), "\(first.text)")
            let received = try #require(environment.upstream.receivedRadial.first)
            #expect(received.problems.isEmpty, "\(received.problems)")
            #expect(received.accountNumber == Self.pan && received.cryptogram == RelayTestVault.cryptogram && received.tenderType == "VC")

            let second = try await environment.authorize(RadialTestMessages.tokenAuthorization(token, orderID: "ORDER-0008"))
            #expect(second.status == 422 && second.text.contains("cryptogram_required"), "\(second.text)")
            #expect(environment.upstream.exchanges == 1)
        }
    }

    @Test func aWalletIsRelayedAndWhatRadialCannotTakeIsRefusedBeforeATokenIsIssued() async throws {
        try await withEnvironment { environment in
            let wallet = try environment.vault.applePayToken(PaymentPayloads.threeDSecure(pan: Self.pan))
            let reply = try await environment.authorize(try RadialTestMessages.walletAuthorization(wallet))
            #expect(reply.status == 200, "\(reply.text)")
            #expect(environment.upstream.receivedRadial.first?.accountNumber == Self.pan)

            let discover = try environment.vault.applePayToken(PaymentPayloads.threeDSecure(pan: "6011000990139424"))
            let refused = try await environment.authorize(try RadialTestMessages.walletAuthorization(discover, orderID: "ORDER-0006"))
            #expect(refused.status == 400 && refused.text.contains("no Radial tender type"), "\(refused.text)")
            #expect(environment.upstream.exchanges == 1)
        }
    }

    /// The store binding first, then (CardIntake) the token's organisation, then the scope: an
    /// unknown token is token_not_found for any key; the organisation's own needs `detokenize`.
    @Test func theStoreTheTokenAndTheScopeAreCheckedInThatOrder() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let answered = try await environment.decryptBlob(PaymentPayloads.threeDSecure(pan: Self.pan))
            let token = try #require(element("PaymentAccountUniqueId", in: answered.text))

            let store = try await environment.authorize(RadialTestMessages.tokenAuthorization(token), storeID: "OTHER")
            #expect(store.status == 403 && element("Code", in: store.text) == "FORBIDDEN" && store.text.contains("relay_radial_store_ids"))
            let unknown = try await environment.authorize(
                RadialTestMessages.tokenAuthorization("4457000000001006"), key: vault.redeemOnlyKey)
            #expect(unknown.status == 404 && unknown.text.contains("token_not_found"), "\(unknown.text)")
            let scope = try await environment.authorize(RadialTestMessages.tokenAuthorization(token), key: vault.redeemOnlyKey)
            #expect(scope.status == 403 && element("Code", in: scope.text) == "FORBIDDEN" && scope.text.contains("detokenize scope"))
            #expect(environment.upstream.exchanges == 0)
            // The held cryptogram was not taken by any of them.
            let first = try await environment.authorize(RadialTestMessages.tokenAuthorization(token))
            #expect(first.status == 200 && environment.upstream.receivedRadial.first?.cryptogram == RelayTestVault.cryptogram)
        }
    }
}
