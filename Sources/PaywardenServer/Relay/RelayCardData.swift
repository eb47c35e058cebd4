import Foundation
import ProcessorMessages
import Vault

/// The card data a relay substitutes, read from a decrypted Apple Pay payload (`paymentData` as
/// Apple defines it) or from a detokenized account.
enum RelayCardData {
    /// The account number, expiry, and for a 3-D Secure payment the cryptogram and ECI.
    /// `cryptogramRequiredBy` names the form that carries a cryptogram only: an EMV payment is
    /// refused for it (before anything is issued or sent, when called first).
    static func forwarded(
        _ paymentData: [UInt8], issued: IssuedToken?, cryptogramRequiredBy format: String?
    ) throws(VaultFailure) -> ForwardedCardData {
        let object = (try? JSONSerialization.jsonObject(with: Data(paymentData))) as? [String: Any]
        let inner = object?["paymentData"] as? [String: Any]
        guard let number = object?["applicationPrimaryAccountNumber"] as? String,
            let expiry = object?["applicationExpirationDate"] as? String
        else { throw .vault(VaultError(.invalidAccountNumber, "the decrypted payload has no account number or expiry")) }
        let cryptogram = inner?["onlinePaymentCryptogram"] as? String
        if let format, cryptogram == nil {
            throw .vault(VaultError(.invalidRequest, "the payment is not 3-D Secure: \(format) carries a cryptogram only"))
        }
        let eci: String? =
            switch inner?["eciIndicator"] {
            case let text as String: text
            case let number as NSNumber: number.stringValue
            default: nil
            }
        do {
            return try ForwardedCardData(
                accountNumber: number, expirationYYMMDD: expiry, cryptogram: cryptogram,
                eci: eci.flatMap { $0.count <= 2 && $0.allSatisfy { $0.isASCII && $0.isNumber } ? $0 : nil },
                network: (issued?.network.rawValue).flatMap { $0.isEmpty ? nil : ProcessorMessages.CardNetwork(cnpCode: $0) })
        } catch {
            throw .vault(VaultError(.invalidAccountNumber, error.message))
        }
    }

    /// A detokenized account: the number and expiry, no cryptogram (a stored token has none).
    static func forwarded(_ account: DetokenizedAccount) throws(VaultFailure) -> ForwardedCardData {
        do {
            return try ForwardedCardData(accountNumber: account.accountNumber.revealed, expirationYYMMDD: account.expirationDate)
        } catch {
            throw .vault(VaultError(.invalidAccountNumber, error.message))
        }
    }
}
