import Crypto

/// A merchant key a token can be decrypted with, as the decryption engine sees it: an opaque
/// identifier for the key operations, and what the KDF needs.
public struct MerchantKeyReference: Sendable, Hashable {
    /// Opaque to the Apple Pay code; meaningful to the ``MerchantKeyOperations`` that made it.
    public let keyID: String
    public let version: PaymentTokenVersion
    /// SHA-256 of the merchant identifier: the KDF's partyV (EC_v1).
    public let merchantIdentifierHash: [UInt8]

    public init(keyID: String, version: PaymentTokenVersion, merchantIdentifierHash: [UInt8]) {
        self.keyID = keyID
        self.version = version
        self.merchantIdentifierHash = merchantIdentifierHash
    }
}

/// Finds the merchant key a token's `publicKeyHash` names. Implementations keep a map in memory:
/// this runs on every token.
public protocol MerchantKeyDirectory: Sendable {
    func key(forPublicKeyHash hash: [UInt8]) -> MerchantKeyReference?
    /// Whether the store holds a key for `hash` it cannot use for lack of what it knows of keys
    /// (in the HSM, without a record in the database), to tell the operator; false by default.
    func hasUnrecordedKey(forPublicKeyHash hash: [UInt8]) -> Bool
}

extension MerchantKeyDirectory {
    public func hasUnrecordedKey(forPublicKeyHash hash: [UInt8]) -> Bool { false }
}

/// The only private-key operations Apple Pay decryption needs, so a key store (an HSM) can
/// implement them without the protocol code knowing how.
///
/// Errors should be ``PaymentTokenError``s: `decryption_failed` for input the key refuses,
/// `hsm_unavailable` or `overloaded` when the key cannot be used right now.
public protocol MerchantKeyOperations: Sendable {
    /// EC_v1: ECDH between the merchant key and `ephemeralPublicKey`, then the one-step KDF of
    /// NIST SP 800-56A with SHA-256, counter first: `SHA-256(00000001 ‖ Z ‖ otherInfo)`.
    func deriveKey(ephemeralPublicKey: EphemeralPublicKey, otherInfo: [UInt8], key: MerchantKeyReference) async throws
        -> SymmetricKey

    /// RSA_v1: removes RSA-OAEP (SHA-256, MGF1-SHA-256, empty label) from `wrappedKey`.
    func unwrapKey(_ wrappedKey: [UInt8], key: MerchantKeyReference) async throws -> SymmetricKey

    /// Why tokens of `version` can never be decrypted here (what the key store lacks and what would
    /// provide it), or nil when they can. Asked before a token's transaction id is claimed.
    func missingCapability(for version: PaymentTokenVersion) -> String?
}

extension MerchantKeyOperations {
    public func missingCapability(for version: PaymentTokenVersion) -> String? { nil }
}
