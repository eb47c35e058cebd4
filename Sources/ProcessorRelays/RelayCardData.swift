import ApplePay
import PaywardenServices
import ProcessorMessages
import Vault

/// The card data a relay substitutes, from a decrypted Apple Pay payload (read once, as
/// ``DecryptedPayment``) or from a detokenized account.
public enum RelayCardData {
    /// The account number, expiry, and for a 3-D Secure payment the cryptogram and ECI, checked
    /// once: called before a token is issued, so what cannot be relayed is refused first, and
    /// given the issued token's network after (``network(of:)``, ``ForwardedCardData/naming(_:)``).
    /// `cryptogramRequiredBy` names the form that carries a cryptogram only: an EMV payment is
    /// refused for it. `payment` is nil when the payload was not a JSON object, refused like one
    /// without an account number. A multi-merchant payment gives the cryptogram of the entry
    /// `submerchant` names (``SubmerchantChoice``), with the payment's account number, expiry and ECI.
    public static func forwarded(
        _ payment: DecryptedPayment?, cryptogramRequiredBy format: String?, submerchant: SubmerchantChoice?
    ) throws(VaultFailure) -> ForwardedCardData {
        guard let payment, let number = payment.applicationPrimaryAccountNumber, let expiry = payment.applicationExpirationDate else {
            throw .vault(VaultError(.invalidAccountNumber, "the decrypted payload has no account number or expiry"))
        }
        let cryptogram = try SubmerchantChoice.cryptogram(of: payment, submerchant)
        if let format, cryptogram == nil {
            throw .vault(VaultError(.invalidRequest, "the payment is not 3-D Secure: \(format) carries a cryptogram only"))
        }
        let eci = payment.credential.eciIndicator
        do {
            return try ForwardedCardData(
                accountNumber: number.revealed, expirationYYMMDD: expiry, cryptogram: cryptogram?.revealed,
                eci: eci.flatMap { $0.count <= 2 && $0.allSatisfy { $0.isASCII && $0.isNumber } ? $0 : nil })
        } catch {
            throw .vault(VaultError(.invalidAccountNumber, error.message))
        }
    }

    /// The network the vault recorded for `issued` (from the BIN when it was issued); nil when
    /// the BIN named none, so the card's own BIN decides.
    public static func network(of issued: IssuedToken) -> ProcessorMessages.CardNetwork? {
        issued.network.code.map(ProcessorMessages.CardNetwork.init)
    }

    /// A detokenized account: the number and expiry, no cryptogram (a stored token has none).
    public static func forwarded(_ account: DetokenizedAccount) throws(VaultFailure) -> ForwardedCardData {
        do {
            return try ForwardedCardData(accountNumber: account.accountNumber.revealed, expirationYYMMDD: account.expirationDate)
        } catch {
            throw .vault(VaultError(.invalidAccountNumber, error.message))
        }
    }
}
