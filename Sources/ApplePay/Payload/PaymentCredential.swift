import PaywardenPrimitives

/// What a decrypted payload's `paymentData` object carries, by the form Apple chose
/// (`paymentDataType`): a 3-D Secure cryptogram, or EMV data with an optional PIN block.
public enum PaymentCredential: Sendable {
    /// `onlinePaymentCryptogram` (Base64) and `eciIndicator` when Apple gave one (a string, or a
    /// number as written).
    case threeDSecure(onlinePaymentCryptogram: Sensitive<String>, eciIndicator: String?)
    /// `emvData` (Base64) and `encryptedPINData` (hex) when present.
    case emv(emvData: Sensitive<String>, encryptedPINData: Sensitive<String>?)
    /// Neither form's fields: the relays refuse to forward such a payment where a cryptogram is needed.
    case none

    /// Read from `paymentData`'s members. The form is told by the fields present, not by
    /// `paymentDataType`, which is only echoed: the relays have always forwarded a cryptogram when
    /// there is one.
    init(_ object: TokenJSON.Object?) {
        if let cryptogram = object?["onlinePaymentCryptogram"]?.text {
            self = .threeDSecure(
                onlinePaymentCryptogram: Sensitive(cryptogram, hint: "cryptogram"), eciIndicator: object?["eciIndicator"]?.textOrNumber)
        } else if let emvData = object?["emvData"]?.text {
            self = .emv(
                emvData: Sensitive(emvData, hint: "EMV data"),
                encryptedPINData: object?["encryptedPINData"]?.text.map { Sensitive($0, hint: "PIN data") })
        } else {
            self = .none
        }
    }

    /// The 3-D Secure cryptogram, nil for any other form.
    public var onlinePaymentCryptogram: Sensitive<String>? {
        guard case .threeDSecure(let cryptogram, _) = self else { return nil }
        return cryptogram
    }

    /// The 3-D Secure ECI, nil for any other form or when Apple gave none.
    public var eciIndicator: String? {
        guard case .threeDSecure(_, let eci) = self else { return nil }
        return eci
    }
}
