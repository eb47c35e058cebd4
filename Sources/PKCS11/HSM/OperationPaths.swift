/// How the HSM computes ECDH followed by the one-step KDF of NIST SP 800-56A (SHA-256, counter
/// first), strongest first. Start-up probing picks the first one the module supports.
public enum ECDHPath: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `CKD_SHA256_KDF_SP800` (PKCS#11 v3.0): Z and the KDF both stay inside the HSM.
    case sp800KDF = "ecdh+sp800-kdf-in-hsm"
    /// `CKD_NULL` into a sensitive, non-extractable Z, then `C_DigestKey`: Z never leaves the HSM.
    case digestKey = "ecdh+sensitive-z+digest-key"
    /// `CKD_NULL` into an extractable Z, KDF in software. Only when configuration allows.
    case extractableSecret = "ecdh+extractable-z"

    public var description: String { rawValue }
}

/// How the HSM makes an RSASSA-PKCS1-v1_5 signature with SHA-256 (CSRs, TLS 1.2 client
/// authentication), strongest first.
public enum RSASigningPath: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `CKM_SHA256_RSA_PKCS`: the HSM hashes and signs.
    case hashAndSign = "sha256-rsa-pkcs"
    /// SHA-256 in software, then `CKM_RSA_PKCS` over the DigestInfo (RFC 8017 section 9.2): the
    /// same signature, for modules that sign but do not hash (some tokens and TPMs).
    case softwareDigest = "sha256-in-software+rsa-pkcs"

    public var description: String { rawValue }
}

/// How the HSM removes RSA-OAEP (SHA-256, MGF1-SHA-256) from a wrapped key, strongest first.
public enum RSADecryptionPath: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `C_UnwrapKey` with OAEP-SHA256.
    case unwrapOAEP = "rsa-oaep-sha256-unwrap"
    /// `C_Decrypt` with OAEP-SHA256.
    case decryptOAEP = "rsa-oaep-sha256-decrypt"
    /// `CKM_RSA_X_509` raw decryption with OAEP decoded in constant time by OpenSSL. Only when
    /// configuration allows.
    case rawWithSoftwareOAEP = "rsa-x509+openssl-oaep-decode"

    public var description: String { rawValue }
}
