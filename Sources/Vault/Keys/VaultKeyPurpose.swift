import PKCS11

/// What a vault key in the HSM is for: one key-encrypting key per kind of record (registrations
/// hold cryptograms for a day, tokens hold account numbers for years) and one HMAC key for the
/// keyed hashes (account-number fingerprints and registration-ID look-ups).
public enum VaultKeyPurpose: String, Sendable, Hashable, CaseIterable, Codable {
    case registrations
    case tokens
    case fingerprint

    /// The kind of secret key to generate on `hsm`; nil when the token offers no way to protect
    /// data keys (its capability probe says which).
    func kind(on hsm: HSM) -> SecretKeyKind? {
        switch self {
        case .registrations, .tokens: hsm.dataKeyEncryptingKeyKind
        case .fingerprint: .hmacSHA256
        }
    }
}
