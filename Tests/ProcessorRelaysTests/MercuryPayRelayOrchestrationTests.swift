import ApplePay
import Foundation
import KeyCustody
import Logging
import PKCS11
import PaywardenServices
import PaywardenStorage
import PaywardenTestTraits
import PaywardenTesting
import ProcessorMessages
import ProcessorRelays
import Testing
import Vault

/// The MercuryPay relay's orchestration without a socket: the vault's service over a real HSM
/// token (``RelayTestVault``), and MercuryPay's answers given in process by the stand-in's own logic.
/// The live `MercuryPayRelayTests` run the same flows over HTTPS through the server.
@Suite(.serialized, .releasesTestResources)
struct MercuryPayRelayOrchestrationTests {
    static let pan = "4457119922391006"
    static let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="
    static let organization = RelayTestVault.organization

    struct Environment: Sendable {
        let vault: RelayTestVault
        let upstream: InProcessProcessorUpstream
        let relay: MercuryPayRelay
        var service: VaultService { vault.service }
        var key: APIKey { vault.key }
        var audit: AuditLog { vault.audit }

        func register(_ payload: [UInt8], paypage: PaypageRecord? = nil) async throws -> String {
            try await vault.register(payload, paypage: paypage)
        }

        func relay(
            _ recordNo: String, tokenType: String = "RegistrationID", submerchant: SubmerchantChoice? = nil
        ) async throws -> MercuryPayRelay.Reply {
            let body =
                #"{"OperatorID":"test","InvoiceNo":"10042","RefNo":"10042","Purchase":"19.99","TokenType":"\#(tokenType)","#
                + #""RecordNo":"\#(recordNo)","Frequency":"OneTime"}"#
            let request = try MercuryPayRequest.parse(Array(body.utf8), operation: .saleByRecordNo)
            return await relay.relay(
                request, key: key, organization: MercuryPayRelayOrchestrationTests.organization, submerchant: submerchant)
        }
    }

    func withEnvironment(_ body: (Environment) async throws -> Void) async throws {
        try await RelayTestVault.with { vault in
            let upstream = InProcessProcessorUpstream(
                format: .mercuryPay, credentials: .init(user: "merchant", password: "upstream-secret"))
            let relay = MercuryPayRelay(
                service: vault.service, upstream: upstream, fields: .init(cryptogramField: "Cryptogram", eciField: "ECI"),
                organizations: [Self.organization])
            try await body(Environment(vault: vault, upstream: upstream, relay: relay))
        }
    }

    @Test func aRegistrationIDGoesUpstreamAsTheCardOnceAndComesBackAsTheToken() async throws {
        try await withEnvironment { environment in
            let id = try await environment.register(PaymentPayloads.threeDSecure(pan: Self.pan, cryptogram: Self.cryptogram))

            let reply = try await environment.relay(id)
            #expect(reply.status == .ok)
            let received = try #require(environment.upstream.receivedMercuryPay.first)
            #expect(environment.upstream.receivedMercuryPay.count == 1 && received.path == "/PaymentsAPI/Credit/Sale")
            #expect(received.problems.isEmpty, "\(received.problems)")
            #expect(received.accountNumber == Self.pan && received.expDate == "1229")
            #expect(received.field("Cryptogram") == Self.cryptogram && received.field("ECI") == "7")
            #expect(received.authorization == "Basic " + Data("merchant:upstream-secret".utf8).base64EncodedString())
            #expect(!received.text.contains(id))

            let text = String(decoding: reply.body.serialized(), as: UTF8.self)
            #expect(reply.body["CmdStatus"]?.stringValue == "Approved")
            let token = try #require(reply.body["RecordNo"]?.stringValue)
            #expect(token.count == 16 && token.hasPrefix("445711") && token.hasSuffix("1006") && token != Self.pan)
            #expect(reply.body["AcctNo"]?.stringValue == "XXXXXXXXXXXX1006")
            #expect(!text.contains(Self.pan) && !text.contains(Self.cryptogram) && !text.contains("UPSTREAM-RECORD"))
            // The token the client got is the vault's, for the same card.
            #expect(try await environment.vault.vault.detokenize(token, organization: Self.organization).accountNumber.revealed == Self.pan)

            // One cryptogram, one authorization: the registration ended when it was relayed.
            let again = try await environment.relay(id)
            #expect(again.status == .gone && again.body["PaywardenErrorCode"]?.stringValue == "registration_expired")
            #expect(environment.upstream.receivedMercuryPay.count == 1)
        }
    }

    @Test func anUpstreamThatFailsLeavesTheRegistrationSpentAndSaysTheOutcomeIsUnknown() async throws {
        try await withEnvironment { environment in
            let id = try await environment.register(PaymentPayloads.threeDSecure(pan: Self.pan, cryptogram: Self.cryptogram))
            environment.upstream.setAnswer(.httpError(500))
            let reply = try await environment.relay(id)
            #expect(reply.status == .badGateway)
            #expect(reply.body["CmdStatus"]?.stringValue == "Error" && reply.body["RecordNo"] == nil)
            let text = String(decoding: reply.body.serialized(), as: UTF8.self)
            #expect(!text.contains(Self.pan) && !text.contains(Self.cryptogram))
            // The card data may have reached the processor: the cryptogram is not offered twice.
            environment.upstream.setAnswer(.approve)
            #expect(try await environment.relay(id).status == .gone)
            #expect(environment.upstream.receivedMercuryPay.count == 1)
        }
    }

    @Test func anotherOrganisationsRegistrationIsNotRedeemedAndNothingIsSent() async throws {
        try await withEnvironment { environment in
            let id = try await environment.register(PaymentPayloads.threeDSecure(pan: Self.pan), paypage: environment.vault.otherPaypage)
            let reply = try await environment.relay(id)
            #expect(reply.status == .notFound && reply.body["PaywardenErrorCode"]?.stringValue == "registration_not_found")
            #expect(environment.upstream.receivedMercuryPay.isEmpty)
        }
    }

    @Test func aRefusalOfTheRelaysOwnIsAuditedByItsCodeAndSpendsNothing() async throws {
        try await withEnvironment { environment in
            let id = try await environment.register(PaymentPayloads.threeDSecure(pan: Self.pan, cryptogram: Self.cryptogram))
            // The relay's check refuses with a code of its own, not the vault's: the registration
            // stays live, and the audit line names that code.
            do throws(VaultFailure) {
                _ = try await environment.service.redeemForOneUse(
                    PresentedRegistrationID(id), key: environment.key, organization: Self.organization
                ) {
                    _ throws(VaultFailure) in
                    throw VaultFailure.token(PaymentTokenError(.decryptionFailed, "the relay cannot use this payload"))
                }
                Issue.record("redeemed where the relay's check refused")
            } catch {
                #expect(error.code == .decryptionFailed)
            }
            let refused = try #require(try environment.audit.records().last)
            #expect(refused.action == "redeem-once" && refused.result == "refused" && refused.detail == "decryption_failed")

            let reply = try await environment.relay(id)
            #expect(reply.status == .ok && environment.upstream.receivedMercuryPay.count == 1)
            let used = try #require(try environment.audit.records().last)
            #expect(used.action == "redeem-once" && used.result == "ok")
            #expect(!(try String(contentsOfFile: environment.audit.path, encoding: .utf8)).contains(id))
        }
    }

    /// A multi-merchant payment (`authenticationResponses`): relayed only with the entry named, that
    /// entry's cryptogram sent with the payment's account number and ECI; a relay that names none,
    /// or one the payment lacks, is refused with nothing sent and the registration left live.
    @Test func aMultiMerchantPaymentIsRelayedWithTheCryptogramOfTheEntryNamed() async throws {
        try await withEnvironment { environment in
            let id = try await environment.register(PaymentPayloads.multiMerchant(pan: Self.pan))

            let unnamed = try await environment.relay(id)
            #expect(unnamed.status == .unprocessableContent && unnamed.body["PaywardenErrorCode"]?.stringValue == "submerchant_required")
            let unknown = try await environment.relay(id, submerchant: .merchantIdentifier(String(repeating: "f", count: 64)))
            #expect(unknown.status == .unprocessableContent && unknown.body["PaywardenErrorCode"]?.stringValue == "submerchant_not_found")
            #expect(environment.upstream.receivedMercuryPay.isEmpty)

            // Apple's identifier as sent, compared without case.
            let hotel = PaymentPayloads.submerchants[1]
            let reply = try await environment.relay(id, submerchant: .merchantIdentifier(hotel.merchantIdentifier.uppercased()))
            #expect(reply.status == .ok)
            let received = try #require(environment.upstream.receivedMercuryPay.first)
            #expect(received.problems.isEmpty, "\(received.problems)")
            #expect(received.accountNumber == Self.pan && received.field("Cryptogram") == hotel.cryptogram && received.field("ECI") == "7")
            let text = String(decoding: reply.body.serialized(), as: UTF8.self)
            #expect(!PaymentPayloads.submerchants.contains { text.contains($0.cryptogram) })
            // One authorisation per registration, whichever entry it used.
            #expect(try await environment.relay(id, submerchant: .coordinator).status == .gone)
        }
    }

    @Test func theCoordinatorsOwnCryptogramIsNamedAsSuchAndASingleMerchantPaymentTakesNoChoice() async throws {
        try await withEnvironment { environment in
            let multi = try await environment.register(PaymentPayloads.multiMerchant(pan: Self.pan))
            let coordinator = try await environment.relay(multi, submerchant: .coordinator)
            #expect(coordinator.status == .ok)
            #expect(environment.upstream.receivedMercuryPay.last?.field("Cryptogram") == "AgAAAAAABk4DWZ4C28yUQAAAAAA=")

            // A stored token's card has no entries to name: the header is refused, not ignored.
            let token = try #require(coordinator.body["RecordNo"]?.stringValue)
            let stored = try await environment.relay(token, tokenType: "OmniToken", submerchant: .coordinator)
            #expect(stored.body["PaywardenErrorCode"]?.stringValue == "submerchant_not_found", "\(stored.body)")
            #expect(environment.upstream.receivedMercuryPay.count == 1)
            let single = try await environment.register(PaymentPayloads.threeDSecure(pan: Self.pan, cryptogram: Self.cryptogram))
            let refused = try await environment.relay(single, submerchant: .coordinator)
            #expect(refused.body["PaywardenErrorCode"]?.stringValue == "submerchant_not_found")
            #expect(environment.upstream.receivedMercuryPay.count == 1)
            #expect(try await environment.relay(single).status == .ok)
            #expect(try await environment.relay(token, tokenType: "OmniToken").status == .ok, "without the header, the card")
        }
    }
}
