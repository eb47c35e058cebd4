import CPKCS11

/// `CK_ATTRIBUTE_TYPE` values Paywarden reads or writes.
public struct AttributeType: RawRepresentable, Hashable, Sendable {
    public let rawValue: CK_ATTRIBUTE_TYPE
    public init(rawValue: CK_ATTRIBUTE_TYPE) { self.rawValue = rawValue }

    public static let objectClass = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_CLASS))
    public static let token = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_TOKEN))
    public static let `private` = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_PRIVATE))
    public static let label = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_LABEL))
    public static let application = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_APPLICATION))
    public static let value = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_VALUE))
    public static let certificateType = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_CERTIFICATE_TYPE))
    public static let issuer = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_ISSUER))
    public static let serialNumber = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_SERIAL_NUMBER))
    public static let subject = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_SUBJECT))
    public static let keyType = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_KEY_TYPE))
    public static let id = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_ID))
    public static let sensitive = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_SENSITIVE))
    public static let encrypt = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_ENCRYPT))
    public static let decrypt = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_DECRYPT))
    public static let wrap = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_WRAP))
    public static let unwrap = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_UNWRAP))
    public static let sign = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_SIGN))
    public static let verify = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_VERIFY))
    public static let derive = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_DERIVE))
    public static let modulus = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_MODULUS))
    public static let modulusBits = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_MODULUS_BITS))
    public static let publicExponent = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_PUBLIC_EXPONENT))
    public static let privateExponent = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_PRIVATE_EXPONENT))
    public static let prime1 = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_PRIME_1))
    public static let prime2 = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_PRIME_2))
    public static let exponent1 = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_EXPONENT_1))
    public static let exponent2 = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_EXPONENT_2))
    public static let coefficient = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_COEFFICIENT))
    public static let valueLength = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_VALUE_LEN))
    public static let extractable = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_EXTRACTABLE))
    public static let alwaysSensitive = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_ALWAYS_SENSITIVE))
    public static let neverExtractable = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_NEVER_EXTRACTABLE))
    public static let modifiable = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_MODIFIABLE))
    public static let ecParams = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_EC_PARAMS))
    public static let ecPoint = AttributeType(rawValue: CK_ATTRIBUTE_TYPE(CKA_EC_POINT))
}
