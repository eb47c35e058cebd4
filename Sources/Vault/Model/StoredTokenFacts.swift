import PaywardenStorage

/// What a high-value token's record says without its sealed account number being opened: enough
/// for a relay to decide whether a use of the token is allowed before anything is detokenized.
public struct StoredTokenFacts: Sendable, Hashable {
    /// DPAN or MPAN, as recorded when the token was issued.
    public let kind: TokenRecord.AccountKind
    public let merchantTokenIdentifier: String?
    /// Names the token in audit lines without being it: the start of its keyed fingerprint.
    public let reference: String
}
