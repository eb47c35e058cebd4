import ApplePay
import Foundation
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import ProcessorMessages
import ProcessorRelays
import Testing
import Vault

/// The one front door for card data, without a socket and on both HSMs: each check in the order
/// `CardIntake` documents, shown by a request that fails two of them at once and is refused by the
/// earlier, and every refusal leaving nothing spent (no token issued, a registration still live,
/// a held cryptogram still held, nothing detokenized).
@Suite(.serialized, .releasesTestResources)
struct CardIntakeTests {
    static let organization = RelayTestVault.organization
    static let dpan = "4457119922391006"
    static let discover = "6011000990139424"

    static let cnp = CnpRelay.form
    static let radial = RadialRelay.form

    /// Runs `body`, which must throw, and returns the stable code it threw.
    func refusal(_ body: () async throws(VaultFailure) -> Void) async -> StableCode? {
        do throws(VaultFailure) {
            try await body()
            return nil
        } catch {
            return error.code
        }
    }

    // MARK: Apple Pay tokens

    @Test func anApplePayTokenIsDecryptedCheckedAndIssuedOnceForItsTransaction() async throws {
        try await RelayTestVault.with { vault in
            let intake = CardIntake(service: vault.service, form: Self.cnp)
            let token = try vault.applePayToken(PaymentPayloads.threeDSecure(pan: Self.dpan, cryptogram: RelayTestVault.cryptogram))
            let (issued, card) = try await intake.payment(token, organization: Self.organization, submerchant: nil)
            #expect(card.accountNumber.revealed == Self.dpan && card.cryptogram?.revealed == RelayTestVault.cryptogram && card.eci == "7")
            #expect(issued.isNew && issued.token != Self.dpan && issued.token.hasSuffix("1006"))
            #expect(card.resolvedNetwork == .visa)
            // The same token again: its transaction id is spent.
            #expect(
                await refusal { () async throws(VaultFailure) in
                    _ = try await intake.payment(token, organization: Self.organization, submerchant: nil)
                } == .replayedTransaction)
            // Another organisation does not use the merchant: refused before the transaction id is claimed.
            let other = try vault.applePayToken(PaymentPayloads.threeDSecure(pan: Self.dpan))
            #expect(
                await refusal { () async throws(VaultFailure) in
                    _ = try await intake.payment(other, organization: RelayTestVault.otherOrganization, submerchant: nil)
                } == .merchantNotAuthorized)
            #expect(try await intake.payment(other, organization: Self.organization, submerchant: nil).issued.isNew == false)
        }
    }

    /// An EMV payment has no cryptogram for the form, a Discover card no Radial tender type, and a
    /// multi-merchant payment needs its entry named: each refused before a token is issued, which
    /// the next registration of the same card shows (its token is new).
    @Test func whatTheFormCannotCarryIsRefusedBeforeATokenIsIssued() async throws {
        try await RelayTestVault.with { vault in
            let cnp = CardIntake(service: vault.service, form: Self.cnp)
            let radial = CardIntake(service: vault.service, form: Self.radial)
            let cases: [(CardIntake, [UInt8], SubmerchantChoice?, StableCode)] = [
                (cnp, PaymentPayloads.emv(pan: "6212345678901232"), nil, .invalidRequest),
                (radial, PaymentPayloads.threeDSecure(pan: Self.discover), nil, .invalidRequest),
                (cnp, PaymentPayloads.multiMerchant(pan: "4111111111111111"), nil, .submerchantRequired),
                (cnp, PaymentPayloads.threeDSecure(pan: "4012888888881881"), .coordinator, .submerchantNotFound),
            ]
            for (intake, payload, submerchant, code) in cases {
                let token = try vault.applePayToken(payload)
                #expect(
                    await refusal { () async throws(VaultFailure) in
                        _ = try await intake.payment(token, organization: Self.organization, submerchant: submerchant)
                    } == code)
                let registered = try await cnp.paymentRegistered(try vault.applePayToken(payload), organization: Self.organization)
                #expect(registered.issued.isNew, "a token was issued for a payment refused with \(code)")
            }
        }
    }

    /// Radial's decryptblob holds the cryptogram for the token's first authorisation, which takes it
    /// once; the second is a stored credential, and a DPAN's is refused there.
    @Test func aHeldCryptogramIsTakenOnceAndTheDPANsLaterUseIsRefused() async throws {
        try await RelayTestVault.with { vault in
            let intake = CardIntake(service: vault.service, form: Self.radial)
            let held = try await intake.paymentHeldForFirstUse(
                try vault.applePayToken(PaymentPayloads.threeDSecure(pan: Self.dpan)), organization: Self.organization)
            #expect(held.card.expirationYYMMDD == "291231" && held.payment?.applicationPrimaryAccountNumber?.revealed == Self.dpan)
            let token = held.issued.token
            let first = try await intake.storedToken(
                token, key: vault.key, organization: Self.organization, use: .customerInitiated, submerchant: nil)
            #expect(first.accountNumber.revealed == Self.dpan && first.cryptogram?.revealed == RelayTestVault.cryptogram)
            #expect(
                await refusal { () async throws(VaultFailure) in
                    _ = try await intake.storedToken(
                        token, key: vault.key, organization: Self.organization, use: .customerInitiated, submerchant: nil)
                } == .cryptogramRequired)
            let lines = try vault.auditLines()
            #expect(lines.contains { $0.hasPrefix("take-held-cryptogram ok taken") })
            #expect(lines.last?.hasPrefix("use-stored-token refused cryptogram_required token ") == true, "\(lines)")
            #expect(!lines.contains { $0.hasPrefix("detokenize") }, "the held payload is the token's card: nothing detokenized")
        }
    }

    /// A card Radial has no tender type for is refused before its held cryptogram is taken: asked
    /// again, the answer is the same refusal, not the later-use rule's (which would follow a take).
    @Test func aHeldCardTheFormCannotCarryIsRefusedAndStaysHeld() async throws {
        try await RelayTestVault.with { vault in
            let intake = CardIntake(service: vault.service, form: Self.radial)
            let held = try await intake.paymentHeldForFirstUse(
                try vault.applePayToken(PaymentPayloads.threeDSecure(pan: Self.discover)), organization: Self.organization)
            for _ in 0..<2 {
                #expect(
                    await refusal { () async throws(VaultFailure) in
                        _ = try await intake.storedToken(
                            held.issued.token, key: vault.key, organization: Self.organization, use: .customerInitiated, submerchant: nil)
                    } == .invalidRequest)
            }
            let lines = try vault.auditLines()
            #expect(lines == ["take-held-cryptogram refused invalid_request", "take-held-cryptogram refused invalid_request"], "\(lines)")
        }
    }

    // MARK: Stored tokens: the order of the checks

    @Test func aTokenTheOrganisationDoesNotHoldIsUnknownBeforeAnyScopeIsAsked() async throws {
        try await RelayTestVault.with { vault in
            let intake = CardIntake(service: vault.service, form: Self.cnp)
            let others = try await vault.storedToken(
                PaymentPayloads.threeDSecure(pan: Self.dpan), organization: RelayTestVault.otherOrganization)
            for token in [others, "4457110000001006"] {
                // 1 before 2: a key without the detokenize scope gets the upstream's answer for it, not forbidden.
                let passed = try await intake.storedTokenIfPaywardens(
                    token, key: vault.redeemOnlyKey, organization: Self.organization, use: .customerInitiated, submerchant: nil)
                #expect(passed == nil)
                #expect(
                    await refusal { () async throws(VaultFailure) in
                        _ = try await intake.storedToken(
                            token, key: vault.key, organization: Self.organization, use: .customerInitiated, submerchant: nil)
                    } == .tokenNotFound)
            }
            #expect(try vault.auditLines().isEmpty, "nothing was used, taken or detokenized")
        }
    }

    @Test func eachCheckOfAStoredTokenRefusesBeforeTheNextAndNothingIsDetokenized() async throws {
        try await RelayTestVault.with { vault in
            let intake = CardIntake(service: vault.service, form: Self.cnp)
            let dpanToken = try await vault.storedToken(PaymentPayloads.threeDSecure(pan: Self.dpan))
            let recurring = StoredCredentialUse.merchantInitiated(indicator: "orderSource recurring")
            func code(_ key: APIKey, _ use: StoredCredentialUse, _ submerchant: SubmerchantChoice?) async -> StableCode? {
                await refusal { () async throws(VaultFailure) in
                    _ = try await intake.storedTokenIfPaywardens(
                        dpanToken, key: key, organization: Self.organization, use: use, submerchant: submerchant)
                }
            }
            // 2 before 4 and 5: the scope, whatever else is wrong.
            #expect(await code(vault.redeemOnlyKey, recurring, .coordinator) == .forbidden)
            // 4 before 5: a submerchant named for a stored credential.
            #expect(await code(vault.key, recurring, .coordinator) == .submerchantNotFound)
            #expect(try vault.auditLines().isEmpty)
            // 5: the rule, audited by the token's reference, before anything is detokenized.
            #expect(await code(vault.key, recurring, nil) == .tokenNotRecurringEligible)
            let lines = try vault.auditLines()
            #expect(lines.count == 1 && lines[0].hasPrefix("use-stored-token refused token_not_recurring_eligible token "), "\(lines)")
            #expect(!lines[0].contains(dpanToken))
            // 6: a use the rule allows is detokenized, audited.
            let card = try await intake.storedToken(
                dpanToken, key: vault.key, organization: Self.organization, use: .customerInitiated, submerchant: nil)
            #expect(card.accountNumber.revealed == Self.dpan && card.cryptogram == nil)
            #expect(try vault.auditLines().last?.hasPrefix("detokenize ok token ") == true)
        }
    }

    @Test func aMerchantTokenServesRecurringUseAndTheFormsOwnRuleComesLast() async throws {
        try await RelayTestVault.with { vault in
            let mpan = try await vault.storedToken(PaymentPayloads.merchantToken(pan: "5204245250001488"))
            let recurring = StoredCredentialUse.merchantInitiated(indicator: "Frequency Recurring")
            let card = try await CardIntake(service: vault.service, form: Self.cnp).storedToken(
                mpan, key: vault.key, organization: Self.organization, use: recurring, submerchant: nil)
            #expect(card.accountNumber.revealed == "5204245250001488" && card.cryptogram == nil)
            // Radial: no held cryptogram, an MPAN is a stored credential; a Discover MPAN has no tender type.
            let radial = CardIntake(service: vault.service, form: Self.radial)
            #expect(
                try await radial.storedToken(mpan, key: vault.key, organization: Self.organization, use: recurring, submerchant: nil)
                    .resolvedNetwork?.radialTenderType == "MC")
            let discover = try await vault.storedToken(
                PaymentPayloads.merchantToken(pan: Self.discover, merchantTokenIdentifier: "DNITHE302409093402145672"))
            #expect(
                await refusal { () async throws(VaultFailure) in
                    _ = try await radial.storedToken(
                        discover, key: vault.key, organization: Self.organization, use: recurring, submerchant: nil)
                } == .invalidRequest)
        }
    }

    /// A multi-merchant payment's entry is chosen before the held payload is taken: naming none, or
    /// one it lacks, leaves it held for the request that names one.
    @Test func aHeldMultiMerchantPaymentStaysHeldUntilItsEntryIsNamed() async throws {
        try await RelayTestVault.with { vault in
            let intake = CardIntake(service: vault.service, form: Self.radial)
            let held = try await intake.paymentHeldForFirstUse(
                try vault.applePayToken(PaymentPayloads.multiMerchant(pan: Self.dpan)), organization: Self.organization)
            let token = held.issued.token
            func take(_ submerchant: SubmerchantChoice?) async throws(VaultFailure) -> ForwardedCardData {
                try await intake.storedToken(
                    token, key: vault.key, organization: Self.organization, use: .customerInitiated, submerchant: submerchant)
            }
            #expect(await refusal { () async throws(VaultFailure) in _ = try await take(nil) } == .submerchantRequired)
            #expect(
                await refusal { () async throws(VaultFailure) in
                    _ = try await take(.merchantIdentifier(String(repeating: "f", count: 64)))
                } == .submerchantNotFound)
            let entry = PaymentPayloads.submerchants[1]
            let card = try await take(.merchantIdentifier(entry.merchantIdentifier))
            #expect(card.cryptogram?.revealed == entry.cryptogram && card.accountNumber.revealed == Self.dpan)
        }
    }

    // MARK: Registration IDs

    @Test func aRegistrationTheFormRefusesStaysLiveAndOneItTakesIsEnded() async throws {
        try await RelayTestVault.with { vault in
            let intake = CardIntake(service: vault.service, form: Self.cnp)
            let emv = try await vault.register(PaymentPayloads.emv())
            #expect(
                await refusal { () async throws(VaultFailure) in
                    _ = try await intake.registration(
                        PresentedRegistrationID(emv), key: vault.key, organization: Self.organization, submerchant: nil)
                } == .invalidRequest)
            // Still live: redeemed for its token only (cnpAPI's registerTokenRequest).
            #expect(
                try await intake.registrationRedeemed(PresentedRegistrationID(emv), key: vault.key, organization: Self.organization).isNew)

            let id = try await vault.register(PaymentPayloads.threeDSecure(pan: Self.dpan))
            let (issued, card) = try await intake.registration(
                PresentedRegistrationID(id), key: vault.key, organization: Self.organization, submerchant: nil)
            #expect(
                card.accountNumber.revealed == Self.dpan && card.cryptogram?.revealed == RelayTestVault.cryptogram
                    && issued.token.hasSuffix("1006"))
            #expect(
                await refusal { () async throws(VaultFailure) in
                    _ = try await intake.registration(
                        PresentedRegistrationID(id), key: vault.key, organization: Self.organization, submerchant: nil)
                } == .registrationExpired)
            let other = try await vault.register(PaymentPayloads.threeDSecure(pan: Self.dpan), paypage: vault.otherPaypage)
            #expect(
                await refusal { () async throws(VaultFailure) in
                    _ = try await intake.registration(
                        PresentedRegistrationID(other), key: vault.key, organization: Self.organization, submerchant: nil)
                } == .registrationNotFound)
            #expect(try !String(contentsOfFile: vault.audit.path, encoding: .utf8).contains(id))
        }
    }
}
