/// How the HSM computes P-384 ECDH for HPKE (usage information's sender key), strongest first.
/// HPKE's KEM feeds the shared secret into HMAC-SHA384, whose inner hash the HSM can finish
/// itself, so no path here needs a KDF inside the HSM.
public enum P384ECDHPath: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `CKD_NULL` into a sensitive, non-extractable Z, then `C_DigestKey` with SHA-384: Z never
    /// leaves the HSM.
    case digestKey = "p384-ecdh+sensitive-z+digest-key"
    /// `CKD_NULL` into an extractable Z, hashed in software. Only when configuration allows
    /// extractable shared secrets, as for EC_v1.
    case extractableSecret = "p384-ecdh+extractable-z"

    public var description: String { rawValue }
}
