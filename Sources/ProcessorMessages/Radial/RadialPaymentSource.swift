/// Where a Radial `CreditCardAuthRequest` takes its card from (seed 003, docs/processors.md, "Radial").
public enum RadialPaymentSource: Sendable, Hashable {
    /// An Apple Pay token in `WalletPaymentInformation` (the digital-wallet request, DW.xml).
    case wallet(RadialApplePayBlob)
    /// The high-value token `decryptblob` answered, in `PaymentContext/PaymentAccountUniqueId
    /// isToken="true"`: the card-not-present request "iOS application uses the decrypted payment
    /// data to create".
    case highValueToken(String)
}
