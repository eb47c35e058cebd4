import CPKCS11

/// `CK_ATTRIBUTE_TYPE` values Paywarden reads or writes.
public struct AttributeType: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let objectClass = AttributeType(rawValue: UInt(CKA_CLASS))
    public static let token = AttributeType(rawValue: UInt(CKA_TOKEN))
    public static let `private` = AttributeType(rawValue: UInt(CKA_PRIVATE))
    public static let label = AttributeType(rawValue: UInt(CKA_LABEL))
    public static let application = AttributeType(rawValue: UInt(CKA_APPLICATION))
    public static let value = AttributeType(rawValue: UInt(CKA_VALUE))
    public static let certificateType = AttributeType(rawValue: UInt(CKA_CERTIFICATE_TYPE))
    public static let issuer = AttributeType(rawValue: UInt(CKA_ISSUER))
    public static let serialNumber = AttributeType(rawValue: UInt(CKA_SERIAL_NUMBER))
    public static let subject = AttributeType(rawValue: UInt(CKA_SUBJECT))
    public static let keyType = AttributeType(rawValue: UInt(CKA_KEY_TYPE))
    public static let id = AttributeType(rawValue: UInt(CKA_ID))
    public static let sensitive = AttributeType(rawValue: UInt(CKA_SENSITIVE))
    public static let encrypt = AttributeType(rawValue: UInt(CKA_ENCRYPT))
    public static let decrypt = AttributeType(rawValue: UInt(CKA_DECRYPT))
    public static let wrap = AttributeType(rawValue: UInt(CKA_WRAP))
    public static let unwrap = AttributeType(rawValue: UInt(CKA_UNWRAP))
    public static let sign = AttributeType(rawValue: UInt(CKA_SIGN))
    public static let verify = AttributeType(rawValue: UInt(CKA_VERIFY))
    public static let derive = AttributeType(rawValue: UInt(CKA_DERIVE))
    public static let modulus = AttributeType(rawValue: UInt(CKA_MODULUS))
    public static let modulusBits = AttributeType(rawValue: UInt(CKA_MODULUS_BITS))
    public static let publicExponent = AttributeType(rawValue: UInt(CKA_PUBLIC_EXPONENT))
    public static let privateExponent = AttributeType(rawValue: UInt(CKA_PRIVATE_EXPONENT))
    public static let prime1 = AttributeType(rawValue: UInt(CKA_PRIME_1))
    public static let prime2 = AttributeType(rawValue: UInt(CKA_PRIME_2))
    public static let exponent1 = AttributeType(rawValue: UInt(CKA_EXPONENT_1))
    public static let exponent2 = AttributeType(rawValue: UInt(CKA_EXPONENT_2))
    public static let coefficient = AttributeType(rawValue: UInt(CKA_COEFFICIENT))
    public static let valueLength = AttributeType(rawValue: UInt(CKA_VALUE_LEN))
    public static let extractable = AttributeType(rawValue: UInt(CKA_EXTRACTABLE))
    public static let alwaysSensitive = AttributeType(rawValue: UInt(CKA_ALWAYS_SENSITIVE))
    public static let neverExtractable = AttributeType(rawValue: UInt(CKA_NEVER_EXTRACTABLE))
    public static let modifiable = AttributeType(rawValue: UInt(CKA_MODIFIABLE))
    public static let copyable = AttributeType(rawValue: UInt(CKA_COPYABLE))
    public static let ecParams = AttributeType(rawValue: UInt(CKA_EC_PARAMS))
    public static let ecPoint = AttributeType(rawValue: UInt(CKA_EC_POINT))
}

extension AttributeType: CustomStringConvertible {
    /// The PKCS#11 name of the attributes templates may leave out, else the number.
    public var description: String {
        self == .copyable ? "CKA_COPYABLE" : "CKA_0x" + String(rawValue, radix: 16)
    }
}
