import ApplePay
import Foundation
import Logging
import PaywardenPrimitives
import PaywardenServices
import ProcessorMessages
import Vault

/// The one front door through which card data enters a relay (docs/processors.md, "Card intake"):
/// an Apple Pay token, a registration ID or a stored high-value token in; the card data a
/// processor's form carries out, with the high-value token that stands for it. Every refusal is a
/// ``VaultFailure`` with its stable code, which each relay words in its own format. No relay asks
/// the vault or the decryption service for card data any other way, so the order of the checks
/// below is written once and no processor's quirk can reorder them.
///
/// Before an authorisation reaches the intake, the relay has checked that the key's organisation may
/// act for the merchant or store its request names (`relay_cnp_merchant_ids`,
/// `relay_mercurypay_organizations`, `relay_radial_store_ids`): nothing is decrypted, redeemed or
/// looked up for any other. (Radial's decryptblob and cnpAPI's `registerTokenRequest` authorise
/// nothing: they issue the organisation's token and send nothing upstream.) Then:
///
/// - **An Apple Pay token** (``payment(_:organization:submerchant:)``): the organisation's policy;
///   the token verified and decrypted (a key of a merchant the organisation does not use is refused
///   before the transaction id is claimed); the card data checked as the form needs it (an account
///   number and expiry, the cryptogram of the submerchant named, a cryptogram at all where the
///   form carries only that, ``Form/accepts``); only then a high-value token issued.
/// - **A registration ID** (``registration(_:key:organization:submerchant:)``): the same checks on
///   the registered payload, then redeemed and ended in one write; refused, it stays live.
/// - **A stored token** (``storedToken(_:key:organization:use:submerchant:)``), in this order:
///   1. looked up among the key's organisation's tokens, nothing decrypted (another organisation's
///      token is unknown here). Unknown: `token_not_found`, or, where a token may be the upstream's
///      own (cnpAPI, ``storedTokenIfPaywardens(_:key:organization:use:submerchant:)``), nil, to be
///      relayed as the client sent it. The look-up comes before the scope because only the
///      organisation's own token is Paywarden's to refuse, and it tells a key nothing about any
///      other organisation;
///   2. the key's `detokenize` scope, the one Paywarden's own detokenize route requires (`forbidden`);
///   3. where the form holds cryptograms (``Form/holdsCryptograms``, Radial), the payload held for
///      the token's first use: the submerchant's entry and the form's checks pass before it is
///      taken, and the take is audited (`take-held-cryptogram`); a held payload is the token's own
///      card, not detokenized again;
///   4. otherwise a submerchant named is refused (a stored credential has no entries to name);
///   5. ``StoredCredentialRule`` on the token's record (a refusal audited as `use-stored-token`);
///   6. the token detokenized (audited as `detokenize`), and ``Form/accepts``.
public struct CardIntake: Sendable {
    /// What a relay's outgoing form can carry, which decides the checks above.
    public struct Form: Sendable {
        /// The form's name in refusals ("cnpAPI's merchant-decrypted form").
        public var name: String
        /// What the form can send for a device account number without its cryptogram.
        public var devicePANs: StoredCredentialRule.DevicePANWithoutCryptogram
        /// Payments' cryptograms are held for their token's first authorisation (Radial's decryptblob).
        public var holdsCryptograms: Bool
        /// The form's own rule (Radial's tender types): refuses a card it has no place for, before a
        /// token is issued, a registration ended or a held cryptogram taken; a stored token's card,
        /// which only detokenization reveals, after it is detokenized.
        public var accepts: @Sendable (ForwardedCardData) throws(VaultFailure) -> Void

        public init(
            name: String, devicePANs: StoredCredentialRule.DevicePANWithoutCryptogram = .customerInitiatedOnly,
            holdsCryptograms: Bool = false,
            accepts: @escaping @Sendable (ForwardedCardData) throws(VaultFailure) -> Void = { _ throws(VaultFailure) in }
        ) {
            self.name = name
            self.devicePANs = devicePANs
            self.holdsCryptograms = holdsCryptograms
            self.accepts = accepts
        }
    }

    let service: VaultService
    public let form: Form

    public init(service: VaultService, form: Form) {
        self.service = service
        self.form = form
    }

    /// The vault's clock: what replies that carry a time (cnpAPI, Radial) stamp.
    public var now: Date { service.now }
    public var logger: Logger { service.logger }

    // MARK: Apple Pay tokens

    /// An Apple Pay token (its `paymentData` JSON) for one authorisation now, in ``form``:
    /// `submerchant` names the cryptogram of a multi-merchant payment (``SubmerchantChoice``).
    public func payment(
        _ paymentData: [UInt8], organization: OrganizationID, submerchant: SubmerchantChoice?
    ) async throws(VaultFailure) -> (issued: IssuedToken, card: ForwardedCardData) {
        let (decrypted, policy) = try await decrypted(paymentData, organization: organization)
        // What cannot be relayed (an EMV payload, a network the form has no place for) is refused
        // before a token is issued for it.
        let card = try forwarded(decrypted.payment, submerchant: submerchant)
        let issued = try await service.issueToken(for: decrypted, policy: policy)
        return (issued, card.naming(RelayCardData.network(of: issued)))
    }

    /// An Apple Pay token whose authorisation comes later with the issued token (Radial's
    /// decryptblob): a cryptogram, or a multi-merchant payment's entries, held sealed for that one
    /// use. The card is checked for an account number and expiry only: the authorisation that
    /// takes it checks the rest. `payment` is the decrypted payload, for the reply's fields.
    public func paymentHeldForFirstUse(
        _ paymentData: [UInt8], organization: OrganizationID
    ) async throws(VaultFailure) -> (issued: IssuedToken, card: ForwardedCardData, payment: DecryptedPayment?) {
        let (decrypted, policy) = try await decrypted(paymentData, organization: organization)
        let multiMerchant = decrypted.payment?.authenticationResponses.isEmpty == false
        let card = try RelayCardData.forwarded(
            decrypted.payment, cryptogramRequiredBy: nil, submerchant: multiMerchant ? .coordinator : nil)
        let issued = try await service.issueToken(for: decrypted, policy: policy)
        if card.cryptogram != nil || multiMerchant {
            try await service.holdCryptogram(of: decrypted, for: issued, organization: organization)
        }
        return (issued, card.naming(RelayCardData.network(of: issued)), decrypted.payment)
    }

    /// An Apple Pay token registered only (cnpAPI's `registerTokenRequest`): a high-value token
    /// issued, nothing relayed, so no form's checks apply. `payment` is the decrypted payload.
    public func paymentRegistered(
        _ paymentData: [UInt8], organization: OrganizationID
    ) async throws(VaultFailure) -> (issued: IssuedToken, payment: DecryptedPayment?) {
        let (decrypted, policy) = try await decrypted(paymentData, organization: organization)
        return (try await service.issueToken(for: decrypted, policy: policy), decrypted.payment)
    }

    private func decrypted(
        _ paymentData: [UInt8], organization: OrganizationID
    ) async throws(VaultFailure) -> (DecryptedPaymentToken, OrganizationPolicy) {
        let policy = try await service.organizationPolicy(organization)
        return (try await service.decrypt(paymentData, policy: policy), policy)
    }

    // MARK: Registration IDs

    /// A registration ID's card for one authorisation in ``form``: what the form cannot carry is
    /// refused while the registration stays live; otherwise it is redeemed and ended in the same
    /// write, so a resend of the ID is `registration_expired`, never a second authorisation with
    /// the same cryptogram. Audited as `redeem-once`.
    public func registration(
        _ id: PresentedRegistrationID, key: APIKey, organization: OrganizationID, submerchant: SubmerchantChoice?
    ) async throws(VaultFailure) -> (issued: IssuedToken, card: ForwardedCardData) {
        let (redemption, card) = try await service.redeemForOneUse(id, key: key, organization: organization) {
            payment throws(VaultFailure) in try forwarded(payment, submerchant: submerchant)
        }
        let issued = redemption.highValueToken
        return (issued, card.naming(RelayCardData.network(of: issued)))
    }

    /// A registration ID exchanged for its high-value token only (cnpAPI's `registerTokenRequest`),
    /// nothing relayed; audited as `redeem`.
    public func registrationRedeemed(_ id: PresentedRegistrationID, key: APIKey, organization: OrganizationID) async throws(VaultFailure)
        -> IssuedToken
    {
        try await service.redeem(id, key: key, organization: organization).highValueToken
    }

    // MARK: Stored tokens

    /// A stored high-value token's card for `use`, without a cryptogram unless one is held for its
    /// first use, after the checks in the order the type's documentation gives; a token the key's
    /// organisation does not hold is `token_not_found`.
    public func storedToken(
        _ token: String, key: APIKey, organization: OrganizationID, use: StoredCredentialUse, submerchant: SubmerchantChoice?
    ) async throws(VaultFailure) -> ForwardedCardData {
        let facts = try await service.storedTokenFacts(token, organization: organization)
        return try await card(of: facts, token, key: key, organization: organization, use: use, submerchant: submerchant)
    }

    /// ``storedToken(_:key:organization:use:submerchant:)`` for a form in which a token may be the
    /// upstream's own (cnpAPI's `token`): nil when the key's organisation does not hold it, to be
    /// sent as the client wrote it. Whatever the key's scopes: the upstream's tokens are no card
    /// data of Paywarden's.
    public func storedTokenIfPaywardens(
        _ token: String, key: APIKey, organization: OrganizationID, use: StoredCredentialUse, submerchant: SubmerchantChoice?
    ) async throws(VaultFailure) -> ForwardedCardData? {
        let facts: StoredTokenFacts
        do throws(VaultFailure) {
            facts = try await service.storedTokenFacts(token, organization: organization)
        } catch {
            if error.code == .tokenNotFound { return nil }
            throw error
        }
        return try await card(of: facts, token, key: key, organization: organization, use: use, submerchant: submerchant)
    }

    /// Steps 2 to 6 for a token the organisation holds (`facts`, its record).
    private func card(
        of facts: StoredTokenFacts, _ token: String, key: APIKey, organization: OrganizationID, use: StoredCredentialUse,
        submerchant: SubmerchantChoice?
    ) async throws(VaultFailure) -> ForwardedCardData {
        // Turning a token into its card is detokenization.
        guard key.scopes.contains(.detokenize) else {
            throw .forbidden(
                "API key \(key.name) needs the detokenize scope to pay with a Paywarden token; nothing was detokenized or sent")
        }
        if form.holdsCryptograms {
            // Nothing that can fail for a while (the HSM, the database) comes after the take: a failure
            // there would spend the one cryptogram on a request the client is told to retry.
            if let held = try await service.takeHeldCryptogram(
                for: token, key: key, organization: organization,
                accept: { payload throws(VaultFailure) in
                    try forwarded(DecryptedPayment(json: payload), submerchant: submerchant)
                })
            {
                return held
            }
        }
        if submerchant != nil { throw SubmerchantChoice.notMultiMerchant }
        do {
            try StoredCredentialRule.check(facts.kind, for: use, devicePANs: form.devicePANs)
        } catch {
            await service.recordRefusedUse(of: facts, key: key, organization: organization, failure: error)
            throw error
        }
        let card = try RelayCardData.forwarded(try await service.detokenize(token, key: key, organization: organization))
        try form.accepts(card)
        return card
    }

    /// The card data of a decrypted or held payload as ``form`` carries it: an account number and
    /// expiry, the cryptogram `submerchant` names, one at all (the forms here carry nothing else
    /// for a wallet payment), and ``Form/accepts``.
    private func forwarded(_ payment: DecryptedPayment?, submerchant: SubmerchantChoice?) throws(VaultFailure) -> ForwardedCardData {
        let card = try RelayCardData.forwarded(payment, cryptogramRequiredBy: form.name, submerchant: submerchant)
        try form.accepts(card)
        return card
    }
}
