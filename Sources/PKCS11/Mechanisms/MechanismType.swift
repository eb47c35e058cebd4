import CPKCS11

/// `CK_MECHANISM_TYPE` values Paywarden uses.
public struct MechanismType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let ecKeyPairGeneration = MechanismType(rawValue: UInt(CKM_EC_KEY_PAIR_GEN))
    public static let rsaKeyPairGeneration = MechanismType(rawValue: UInt(CKM_RSA_PKCS_KEY_PAIR_GEN))
    public static let ecdh1Derive = MechanismType(rawValue: UInt(CKM_ECDH1_DERIVE))
    public static let ecdsa = MechanismType(rawValue: UInt(CKM_ECDSA))
    public static let sha256RSAPKCS = MechanismType(rawValue: UInt(CKM_SHA256_RSA_PKCS))
    public static let rsaPKCS = MechanismType(rawValue: UInt(CKM_RSA_PKCS))
    public static let rsaPKCSOAEP = MechanismType(rawValue: UInt(CKM_RSA_PKCS_OAEP))
    public static let rsaX509 = MechanismType(rawValue: UInt(CKM_RSA_X_509))
    public static let sha256 = MechanismType(rawValue: UInt(CKM_SHA256))
    public static let aesGCM = MechanismType(rawValue: UInt(CKM_AES_GCM))
    public static let aesKeyGeneration = MechanismType(rawValue: UInt(CKM_AES_KEY_GEN))
    public static let genericSecretKeyGeneration = MechanismType(rawValue: UInt(CKM_GENERIC_SECRET_KEY_GEN))
    public static let aesKeyWrapPad = MechanismType(rawValue: UInt(CKM_AES_KEY_WRAP_PAD))
    public static let sha256HMAC = MechanismType(rawValue: UInt(CKM_SHA256_HMAC))
    public static let sha256RSAPKCSPSS = MechanismType(rawValue: UInt(CKM_SHA256_RSA_PKCS_PSS))
    public static let sha384 = MechanismType(rawValue: UInt(CKM_SHA384))

    public var description: String {
        switch self {
        case .ecKeyPairGeneration: "CKM_EC_KEY_PAIR_GEN"
        case .rsaKeyPairGeneration: "CKM_RSA_PKCS_KEY_PAIR_GEN"
        case .ecdh1Derive: "CKM_ECDH1_DERIVE"
        case .ecdsa: "CKM_ECDSA"
        case .sha256RSAPKCS: "CKM_SHA256_RSA_PKCS"
        case .rsaPKCS: "CKM_RSA_PKCS"
        case .rsaPKCSOAEP: "CKM_RSA_PKCS_OAEP"
        case .rsaX509: "CKM_RSA_X_509"
        case .sha256: "CKM_SHA256"
        case .aesGCM: "CKM_AES_GCM"
        case .aesKeyGeneration: "CKM_AES_KEY_GEN"
        case .genericSecretKeyGeneration: "CKM_GENERIC_SECRET_KEY_GEN"
        case .aesKeyWrapPad: "CKM_AES_KEY_WRAP_PAD"
        case .sha256HMAC: "CKM_SHA256_HMAC"
        case .sha256RSAPKCSPSS: "CKM_SHA256_RSA_PKCS_PSS"
        case .sha384: "CKM_SHA384"
        default: "0x" + String(rawValue, radix: 16)
        }
    }
}

/// The key derivation function applied to the ECDH shared secret inside the HSM.
public enum ECDHKeyDerivationFunction: Sendable, Hashable {
    /// `CKD_NULL`: the derived object holds Z itself.
    case null
    /// `CKD_SHA256_KDF_SP800` (PKCS#11 v3.0): NIST SP 800-56A one-step KDF, counter first.
    case sha256SP800

    var rawValue: CK_ULONG {
        switch self {
        case .null: CK_ULONG(CKD_NULL)
        case .sha256SP800: CK_ULONG(CPKCS11_CKD_SHA256_KDF_SP800)
        }
    }
}
