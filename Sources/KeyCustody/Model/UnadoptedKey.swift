import PKCS11

/// A private key in the HSM that this database holds no record of: made by Paywarden with another
/// database (before a move to PostgreSQL, say), or another application's key sharing the token.
/// `keys adopt` gives it a record.
public struct UnadoptedKey: Sendable, Hashable {
    public let key: KeyObject
    /// Base64 SHA-256 of the DER SubjectPublicKeyInfo, as ``MerchantKey/publicKeyHash``.
    public let publicKeyHash: String

    public var id: KeyIdentifier { key.id }
}
