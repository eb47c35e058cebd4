/// The secret (symmetric) keys Paywarden holds in the HSM.
///
/// One purpose per key: an AES key that could both wrap and decrypt would let a caller wrap a
/// sensitive key and decrypt the result (`CKM_AES_KEY_WRAP_PAD` also encrypts and decrypts), so
/// wrapping keys and encryption keys are different kinds, and no kind's usages can be changed later.
public enum SecretKeyKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// AES-256 for `CKM_AES_GCM` encryption: sealed records, and data keys where the token has no
    /// RFC 5649 key wrap.
    case aes256Encryption = "aes-256-gcm"
    /// AES-256 for `CKM_AES_KEY_WRAP_PAD`: wraps and unwraps data keys, nothing else.
    case aes256KeyWrap = "aes-256-key-wrap"
    /// A 256-bit generic secret for HMAC-SHA256 (keyed hashes).
    case hmacSHA256 = "hmac-sha256"

    var keyType: KeyType {
        switch self {
        case .aes256Encryption, .aes256KeyWrap: .aes
        case .hmacSHA256: .genericSecret
        }
    }

    var generation: Mechanism {
        switch self {
        case .aes256Encryption, .aes256KeyWrap: .aesKeyGeneration
        case .hmacSHA256: .genericSecretKeyGeneration
        }
    }

    /// The one usage the kind needs, every other usage explicitly false.
    var usage: [Attribute] {
        let granted: Set<AttributeType> =
            switch self {
            case .aes256Encryption: [.encrypt, .decrypt]
            case .aes256KeyWrap: [.wrap, .unwrap]
            case .hmacSHA256: [.sign, .verify]
            }
        return [AttributeType.encrypt, .decrypt, .wrap, .unwrap, .sign, .verify, .derive].map { .bool($0, granted.contains($0)) }
    }

    static let valueLength: UInt = 32
}

/// How a new secret key is named: a `CKA_ID` and `CKA_LABEL` the caller controls.
public struct SecretKeySpecification: Sendable, Hashable {
    public var id: KeyIdentifier
    public var label: String
    public var kind: SecretKeyKind

    public init(id: KeyIdentifier = .random(), label: String, kind: SecretKeyKind) {
        self.id = id
        self.label = label
        self.kind = kind
    }

    /// Always a private token object, sensitive, never extractable, not copyable, and not
    /// modifiable (its usages stay what its kind grants).
    ///
    /// - Parameter unknown: optional attributes the token does not know, left out rather than
    ///   failing the generation (NSS softokn has no `CKA_COPYABLE`, and refuses a token key
    ///   that names it). Only ``optionalAttributes`` may be left out.
    func template(omitting unknown: Set<AttributeType> = []) -> [Attribute] {
        let protection: [Attribute] = [.bool(.copyable, false), .bool(.modifiable, false)]
        return [
            .objectClass(.secretKey), .keyType(kind.keyType), .id(id), .label(label),
            .bool(.token, true), .bool(.private, true), .bool(.sensitive, true), .bool(.extractable, false),
        ] + protection.filter { !(unknown.contains($0.type) && Self.optionalAttributes.contains($0.type)) } + kind.usage
    }

    /// Attributes a secret key is made without when the token does not know them: what they add
    /// (no `C_CopyObject`) is defence in depth, while sensitivity and extractability are required
    /// of every key and checked after it is made.
    static let optionalAttributes: Set<AttributeType> = [.copyable]
}

/// A secret key in the token, with the attributes that prove it cannot leave the HSM.
public struct SecretKeyObject: Sendable, Hashable {
    public let id: KeyIdentifier
    public let label: String
    public let kind: SecretKeyKind
    public let isSensitive: Bool
    public let isExtractable: Bool
    /// Whether the key was never extractable and always sensitive since its creation.
    public let neverLeftTheHSM: Bool
    /// The handle in the current module generation; never valid after a recycle.
    let handle: ObjectHandle
}

/// How a data key is protected by a key-encrypting key in the HSM, strongest first.
public enum DataKeyWrapPath: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `C_WrapKey` / `C_UnwrapKey` with `CKM_AES_KEY_WRAP_PAD` (RFC 5649).
    case aesKeyWrapPad = "aes-key-wrap-pad"
    /// `C_Encrypt` / `C_Decrypt` of the data key with `CKM_AES_GCM` (random 96-bit IV).
    case aesGCM = "aes-gcm"

    public var description: String { rawValue }

    /// The kind of key-encrypting key this path uses.
    public var keyEncryptingKeyKind: SecretKeyKind {
        switch self {
        case .aesKeyWrapPad: .aes256KeyWrap
        case .aesGCM: .aes256Encryption
        }
    }

    /// Data keys are AES keys: 128, 192 or 256 bits, on either path alike.
    static let dataKeyLengths: Set<Int> = [16, 24, 32]
}
