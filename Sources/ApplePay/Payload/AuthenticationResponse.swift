import PaywardenPrimitives

/// One submerchant's entry in a multi-merchant payment's `authenticationResponses` (Apple's
/// "Payment token format reference": "a list of submerchant responses that contain cryptograms"):
/// its cryptogram, for the amount authorised to it. Read by ``AuthenticationResponses``, which
/// refuses an entry without all three fields.
public struct AuthenticationResponse: Sendable {
    /// As Apple sent it. Apple calls it "the submerchant identifier as provided by the coordinator
    /// merchant"; the only public sample is 64 hex characters, a digest whose input Apple does not
    /// document (docs/apple-pay.md, "Multi-merchant payments"), so it is matched as written, never derived.
    public let merchantIdentifier: String
    /// The network's cryptogram for this submerchant (Base64).
    public let authenticationData: Sensitive<String>
    /// Minor units, as written: a string here (a number at the top level of the payload).
    public let transactionAmount: String

    init(merchantIdentifier: String, authenticationData: Sensitive<String>, transactionAmount: String) {
        self.merchantIdentifier = merchantIdentifier
        self.authenticationData = authenticationData
        self.transactionAmount = transactionAmount
    }
}
