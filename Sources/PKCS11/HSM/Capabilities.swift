/// What the token can do, found by probing it at start-up with throw-away session keys; every
/// path is trusted only after its result matched software on the same inputs.
public struct Capabilities: Sendable, Hashable {
    /// The ECDH path in use, or nil when the token offers none that configuration allows.
    public let ecdhPath: ECDHPath?
    /// The RSA-OAEP path in use, or nil when none is available or allowed.
    public let rsaDecryptionPath: RSADecryptionPath?
    /// How data keys are protected by key-encrypting keys, or nil when neither path works.
    public let dataKeyWrapPath: DataKeyWrapPath?
    /// `CKM_AES_GCM` with additional data, in both directions.
    public let aesGCM: Bool
    /// `CKM_SHA256_HMAC` signing.
    public let hmacSHA256: Bool
    /// `CKM_SHA256_RSA_PKCS_PSS` signing: TLS 1.3 client authentication with an RSA key needs it.
    public let rsaPSS: Bool
    /// How RSASSA-PKCS1-v1_5 SHA-256 signatures are made (CSRs, TLS 1.2 client authentication),
    /// or nil when no path passed the probe (signing then tries each in turn).
    public var rsaSigningPath: RSASigningPath? = nil
    /// Optional attributes the token does not know, which templates leave out (NSS softokn:
    /// `CKA_COPYABLE`). Asked of the token, never assumed.
    public let unknownAttributes: Set<AttributeType>
    /// The mechanisms the token lists. Informational: every path is probed whether listed or not
    /// (NSS softokn digests with `CKM_SHA256` without listing it).
    public let mechanisms: Set<MechanismType>
    /// One line per path tried, with the reason a path was not taken.
    public let report: [String]
    /// The P-384 ECDH path for HPKE (usage information's sender key), or nil when the token
    /// cannot keep a P-384 key sensitive and do ECDH with it (the key is then wrapped instead).
    public var p384ECDHPath: P384ECDHPath? = nil
    /// False when the token makes no secret key through PKCS#11, from a value or generated
    /// (tpm2-pkcs11 1.9: only its own tool makes them), whatever mechanisms it lists.
    public var makesSecretKeys = true
    /// False when the token was opened without probing: no path is known, and none is known missing.
    public var isProbed = true

    /// Nothing probed (administration that never uses the key operations).
    static func unprobed(_ mechanisms: Set<MechanismType>) -> Capabilities {
        Capabilities(
            ecdhPath: nil, rsaDecryptionPath: nil, dataKeyWrapPath: nil, aesGCM: false, hmacSHA256: false, rsaPSS: false,
            unknownAttributes: [], mechanisms: mechanisms, report: ["not probed"], isProbed: false
        )
    }
}
