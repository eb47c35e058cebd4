import CPKCS11

/// `CKA_CLASS` values Paywarden uses.
public struct ObjectClass: RawRepresentable, Hashable, Sendable {
    public let rawValue: CK_OBJECT_CLASS
    public init(rawValue: CK_OBJECT_CLASS) { self.rawValue = rawValue }

    public static let data = ObjectClass(rawValue: CK_OBJECT_CLASS(CKO_DATA))
    public static let certificate = ObjectClass(rawValue: CK_OBJECT_CLASS(CKO_CERTIFICATE))
    public static let publicKey = ObjectClass(rawValue: CK_OBJECT_CLASS(CKO_PUBLIC_KEY))
    public static let privateKey = ObjectClass(rawValue: CK_OBJECT_CLASS(CKO_PRIVATE_KEY))
    public static let secretKey = ObjectClass(rawValue: CK_OBJECT_CLASS(CKO_SECRET_KEY))
}

/// `CKA_KEY_TYPE` values Paywarden uses.
public struct KeyType: RawRepresentable, Hashable, Sendable {
    public let rawValue: CK_KEY_TYPE
    public init(rawValue: CK_KEY_TYPE) { self.rawValue = rawValue }

    public static let rsa = KeyType(rawValue: CK_KEY_TYPE(CKK_RSA))
    public static let ec = KeyType(rawValue: CK_KEY_TYPE(CKK_EC))
    public static let genericSecret = KeyType(rawValue: CK_KEY_TYPE(CKK_GENERIC_SECRET))
    public static let aes = KeyType(rawValue: CK_KEY_TYPE(CKK_AES))
}

/// `CKA_CERTIFICATE_TYPE` values Paywarden uses.
public struct CertificateType: RawRepresentable, Hashable, Sendable {
    public let rawValue: CK_CERTIFICATE_TYPE
    public init(rawValue: CK_CERTIFICATE_TYPE) { self.rawValue = rawValue }

    public static let x509 = CertificateType(rawValue: CK_CERTIFICATE_TYPE(CKC_X_509))
}
