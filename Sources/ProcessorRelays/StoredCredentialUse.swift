import PaywardenServices

/// How a relayed request uses a stored high-value token, one relayed without a cryptogram (a
/// MercuryPay OmniToken, a cnpAPI `token`, a Radial `isToken="true"`). Each relay reads it from its
/// own format's fields; ``StoredCredentialRule`` decides what each kind of account may serve.
public enum StoredCredentialUse: Sendable, Hashable {
    /// The cardholder starts this one payment (an order paid with a saved card): MercuryPay
    /// `Frequency` OneTime; cnpAPI without a recurring `orderSource` or a merchant-initiated or
    /// credential-establishing `processingType` (`cardholderInitiatedCOF` included).
    case customerInitiated
    /// Recurring, installment or unscheduled card-on-file use that the merchant starts, or a payment
    /// that sets the credential up for it: what the card networks call a stored credential.
    /// `indicator` names the request's field and value that say so (`Frequency Recurring`,
    /// `orderSource recurring`), for the refusal's message; never card data.
    case merchantInitiated(indicator: String)
}
