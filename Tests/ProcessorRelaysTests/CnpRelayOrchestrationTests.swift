import Foundation
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import ProcessorMessages
import ProcessorRelays
import Testing
import Vault

/// The cnpAPI relay's orchestration without a socket, on both HSMs: the vault's service over a
/// real HSM token (``RelayTestVault``) and the upstream answered in process by the stand-in's own
/// logic, which checks what arrived. The live `CnpRelayTests` run the flows over HTTP(S) through
/// the server.
@Suite(.serialized, .releasesTestResources)
struct CnpRelayOrchestrationTests {
    static let organization = RelayTestVault.organization
    static let pan = "4457119922391006"

    struct Environment: Sendable {
        let vault: RelayTestVault
        let upstream: InProcessProcessorUpstream
        let relay: CnpRelay

        /// The relay's reply to `transaction` from `key` (the organisation's detokenizing key by
        /// default), as text.
        func relay(
            _ transaction: String, key: APIKey? = nil, merchantId: String = "01234", submerchant: SubmerchantChoice? = nil
        ) async throws -> (text: String, status: Int) {
            let body = CnpTestMessages.envelope(.cnp, password: "unused", merchantId: merchantId, transaction)
            let reply = await relay.relay(
                try CnpOnlineRequest.parse(body), key: key ?? vault.key, organization: CnpRelayOrchestrationTests.organization,
                submerchant: submerchant)
            return (String(decoding: ProcessorXML.serialize(reply.document), as: UTF8.self), Int(reply.status.code))
        }
    }

    func withEnvironment(_ body: (Environment) async throws -> Void) async throws {
        try await RelayTestVault.with { vault in
            let upstream = InProcessProcessorUpstream(format: .cnpAPI, credentials: .init(user: "paywarden", password: "upstream-secret"))
            let relay = CnpRelay(
                service: vault.service, upstream: upstream, merchantIDs: [Self.organization: ["01234"]], logger: vault.service.logger)
            try await body(Environment(vault: vault, upstream: upstream, relay: relay))
        }
    }

    @Test func anApplePaySaleGoesUpstreamAsTheCardAndComesBackWithTheToken() async throws {
        try await withEnvironment { environment in
            let token = try environment.vault.applePayToken(PaymentPayloads.threeDSecure(pan: Self.pan))
            let reply = try await environment.relay(try CnpTestMessages.applePay(token: token))
            #expect(reply.status == 200 && element("response", in: reply.text) == "000", "\(reply.text)")
            let received = try #require(environment.upstream.received.first)
            #expect(received.problems.isEmpty, "\(received.problems)")
            #expect(received.accountNumber == Self.pan && received.cryptogram == RelayTestVault.cryptogram)
            #expect(received.user == "paywarden" && received.password == "upstream-secret")
            let issued = try #require(element("cnpToken", in: reply.text))
            #expect(issued.hasSuffix("1006") && issued != Self.pan && !reply.text.contains(Self.pan))

            // An EMV payment has no place in the merchant-decrypted form: refused, nothing sent.
            let emv = try environment.vault.applePayToken(PaymentPayloads.emv())
            let refused = try await environment.relay(try CnpTestMessages.applePay(token: emv))
            #expect(refused.text.contains(#"response="1""#) && refused.text.contains("invalid_request"), "\(refused.text)")
            #expect(environment.upstream.exchanges == 1)
        }
    }

    @Test func aRegistrationIDIsRelayedOnceAndItsResendDeclined() async throws {
        try await withEnvironment { environment in
            let id = try await environment.vault.register(PaymentPayloads.threeDSecure(pan: Self.pan))
            let reply = try await environment.relay(CnpTestMessages.paypage(registrationID: id))
            #expect(element("response", in: reply.text) == "000", "\(reply.text)")
            #expect(environment.upstream.received.first?.accountNumber == Self.pan && !reply.text.contains(id))
            let again = try await environment.relay(CnpTestMessages.paypage(registrationID: id))
            #expect(element("response", in: again.text) == "878", "\(again.text)")
            let unknown = try await environment.relay(CnpTestMessages.paypage(registrationID: "0123456789"))
            #expect(element("response", in: unknown.text) == "877", "\(unknown.text)")
            #expect(environment.upstream.exchanges == 1)
        }
    }

    /// The organisation's own token is swapped for its card; any other token (the upstream's own,
    /// another organisation's) passes through unchanged, for a key with or without `detokenize`; the
    /// organisation's own with a key without it is refused, nothing sent.
    @Test func aStoredTokenIsSwappedOnlyWhenItIsTheOrganisationsAndTheKeyMayDetokenize() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let own = try await vault.storedToken(PaymentPayloads.threeDSecure(pan: Self.pan))
            let reply = try await environment.relay(CnpTestMessages.tokenTransaction(own))
            #expect(element("response", in: reply.text) == "000", "\(reply.text)")
            let swapped = try #require(environment.upstream.received.last)
            #expect(swapped.problems.isEmpty && swapped.accountNumber == Self.pan && swapped.cryptogram == nil, "\(swapped.text)")
            #expect(!swapped.text.contains(own))

            let others = try await vault.storedToken(
                PaymentPayloads.threeDSecure(pan: Self.pan), organization: RelayTestVault.otherOrganization)
            for (token, key) in [(others, vault.key), ("4457000000001006", vault.redeemOnlyKey), (others, vault.redeemOnlyKey)] {
                let passed = try await environment.relay(CnpTestMessages.tokenTransaction(token), key: key)
                #expect(element("response", in: passed.text) == "000", "\(passed.text)")
                let sent = try #require(environment.upstream.received.last)
                #expect(sent.accountNumber == nil && sent.text.contains(">\(token)</cnpToken>"))
            }
            let sentBefore = environment.upstream.exchanges
            let forbidden = try await environment.relay(CnpTestMessages.tokenTransaction(own), key: vault.redeemOnlyKey)
            #expect(forbidden.text.contains(#"response="1""#) && forbidden.text.contains("detokenize scope"), "\(forbidden.text)")
            // A DPAN's token for a recurring use: 899, decided on its record.
            let recurring = try await environment.relay(CnpTestMessages.tokenTransaction(own, orderSource: "recurring"))
            #expect(element("response", in: recurring.text) == "899", "\(recurring.text)")
            #expect(environment.upstream.exchanges == sentBefore)
        }
    }

    @Test func aMerchantIdNotBoundToTheOrganisationIsRefusedBeforeAnythingIsRedeemed() async throws {
        try await withEnvironment { environment in
            let id = try await environment.vault.register(PaymentPayloads.threeDSecure(pan: Self.pan))
            let refused = try await environment.relay(CnpTestMessages.paypage(registrationID: id), merchantId: "56789")
            #expect(refused.text.contains(#"response="1""#) && refused.text.contains("relay_cnp_merchant_ids"), "\(refused.text)")
            #expect(environment.upstream.exchanges == 0)
            // The registration is still live.
            #expect(element("response", in: try await environment.relay(CnpTestMessages.paypage(registrationID: id)).text) == "000")
        }
    }
}
