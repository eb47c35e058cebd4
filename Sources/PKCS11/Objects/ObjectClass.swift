import CPKCS11

/// `CKA_CLASS` values Paywarden uses.
public struct ObjectClass: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let data = ObjectClass(rawValue: UInt(CKO_DATA))
    public static let certificate = ObjectClass(rawValue: UInt(CKO_CERTIFICATE))
    public static let publicKey = ObjectClass(rawValue: UInt(CKO_PUBLIC_KEY))
    public static let privateKey = ObjectClass(rawValue: UInt(CKO_PRIVATE_KEY))
    public static let secretKey = ObjectClass(rawValue: UInt(CKO_SECRET_KEY))
}

/// `CKA_KEY_TYPE` values Paywarden uses.
public struct KeyType: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let rsa = KeyType(rawValue: UInt(CKK_RSA))
    public static let ec = KeyType(rawValue: UInt(CKK_EC))
    public static let genericSecret = KeyType(rawValue: UInt(CKK_GENERIC_SECRET))
    public static let aes = KeyType(rawValue: UInt(CKK_AES))
}

/// `CKA_CERTIFICATE_TYPE` values Paywarden uses.
public struct CertificateType: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let x509 = CertificateType(rawValue: UInt(CKC_X_509))
}
