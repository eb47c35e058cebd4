import PaywardenServices
import PaywardenStorage
import ProcessorMessages
import Vault

/// The one rule for a Paywarden high-value token relayed without a cryptogram (a later,
/// stored-credential use), for every relay: MercuryPay's OmniToken, cnpAPI's `token`, Radial's
/// `isToken="true"` once its held cryptogram is gone.
///
/// - A merchant token (MPAN) is made for stored-credential use: relayed for any use.
/// - A device account number (DPAN) is relayed for a one-off payment the cardholder starts
///   (``StoredCredentialUse/customerInitiated``), as a saved card, and refused for recurring,
///   installment or unscheduled merchant-initiated use and for setting such use up
///   (``StoredCredentialUse/merchantInitiated(indicator:)``): Visa stopped accepting device DPANs as
///   stored credentials for those on 30 July 2025, and Apple Pay issues merchant tokens for them.
///   The refusal is `token_not_recurring_eligible`.
/// - Where the relay's format authenticates a DPAN with its cryptogram only
///   (``DevicePANWithoutCryptogram/never(_:)``: Radial, whose card-not-present request carries it in
///   `SecureVerificationData` and docs/processors.md, "Radial", never sends a DPAN without it), a DPAN's token
///   without a cryptogram is refused for every use: `cryptogram_required`.
///
/// Every refusal is decided on the token's record before anything is detokenized, and audited
/// (`use-stored-token`, refused) with the token's reference only. The kind comes from the vault's
/// record of the token (``VaultService/storedTokenFacts(_:organization:)``), never from its digits.
public enum StoredCredentialRule {
    /// What a relay's format can send for a device account number without its cryptogram.
    public enum DevicePANWithoutCryptogram: Sendable, Hashable {
        /// A one-off payment the cardholder starts, as a saved card (cnpAPI, MercuryPay).
        case customerInitiatedOnly
        /// Nothing: the format authenticates a DPAN with its cryptogram only; names the format.
        case never(String)
    }

    /// Throws `token_not_recurring_eligible` or `cryptogram_required` when `kind` may not serve `use`
    /// in a format that treats DPANs as `devicePANs` says.
    public static func check(
        _ kind: TokenRecord.AccountKind, for use: StoredCredentialUse, devicePANs: DevicePANWithoutCryptogram
    ) throws(VaultFailure) {
        guard !kind.recurringEligible else { return }
        if case .never(let format) = devicePANs {
            throw .vault(
                VaultError(
                    .cryptogramRequired,
                    "the token stands for a device account number, which \(format) authorizes only with the cryptogram of a "
                        + "decryptblob answered within 24 hours, once; nothing was detokenized or sent. A new Apple Pay payment "
                        + "(decryptblob or DW.xml) brings a new one"))
        }
        guard case .merchantInitiated(let indicator) = use else { return }
        throw .vault(
            VaultError(
                .tokenNotRecurringEligible,
                "the token stands for a device account number (DPAN), which is not a stored credential for recurring or "
                    + "merchant-initiated use (Visa, 30 July 2025), and \(indicator) asks for one; nothing was detokenized or sent. "
                    + "Recurring payments need a merchant token (MPAN); a DPAN's token serves one-off payments the cardholder starts"))
    }
}
