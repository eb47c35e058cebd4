/// The key algorithms Paywarden holds in the HSM.
public enum KeyAlgorithm: String, Sendable, Hashable, Codable, CaseIterable {
    /// EC on NIST P-256 (secp256r1).
    case ecP256 = "ec"
    /// RSA with a 2048-bit modulus.
    case rsa2048 = "rsa"

    var keyType: KeyType {
        switch self {
        case .ecP256: .ec
        case .rsa2048: .rsa
        }
    }

    /// DER of the named-curve OID 1.2.840.10045.3.1.7 (prime256v1), the `CKA_EC_PARAMS` value.
    static let p256Parameters: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
}

/// What a private key may do inside the HSM. Each purpose gets only the usages it needs.
public struct KeyUsage: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The attributes set, in Cryptoki's names: `CKA_SIGN, CKA_DECRYPT`, or `none`.
    public var description: String {
        let names = [(Self.derive, "CKA_DERIVE"), (.sign, "CKA_SIGN"), (.decrypt, "CKA_DECRYPT"), (.unwrap, "CKA_UNWRAP")]
        let set = names.filter { contains($0.0) }.map(\.1)
        return set.isEmpty ? "none" : set.joined(separator: ", ")
    }

    /// ECDH (`CKA_DERIVE`).
    public static let derive = KeyUsage(rawValue: 1 << 0)
    /// Signatures, e.g. over a CSR (`CKA_SIGN`).
    public static let sign = KeyUsage(rawValue: 1 << 1)
    /// RSA decryption (`CKA_DECRYPT`).
    public static let decrypt = KeyUsage(rawValue: 1 << 2)
    /// RSA key unwrapping (`CKA_UNWRAP`).
    public static let unwrap = KeyUsage(rawValue: 1 << 3)
}

/// How a new or imported private key is labelled and what it may do.
public struct KeySpecification: Sendable, Hashable {
    public var id: KeyIdentifier
    public var label: String
    public var algorithm: KeyAlgorithm
    public var usage: KeyUsage

    public init(id: KeyIdentifier = .random(), label: String, algorithm: KeyAlgorithm, usage: KeyUsage) {
        self.id = id
        self.label = label
        self.algorithm = algorithm
        self.usage = usage
    }

    /// The private-key template: always a token object, private, sensitive and never extractable.
    var privateKeyTemplate: [Attribute] {
        [
            .objectClass(.privateKey), .keyType(algorithm.keyType), .id(id), .label(label),
            .bool(.token, true), .bool(.private, true),
            .bool(.sensitive, true), .bool(.extractable, false),
            .bool(.derive, usage.contains(.derive)), .bool(.sign, usage.contains(.sign)),
            .bool(.decrypt, usage.contains(.decrypt)), .bool(.unwrap, usage.contains(.unwrap)),
        ]
    }

    var publicKeyTemplate: [Attribute] { publicKeyTemplate(statingUsages: true) }

    /// The public-key template; without `CKA_VERIFY`, `CKA_ENCRYPT` and `CKA_WRAP` for a module
    /// that sets them by its own rules.
    func publicKeyTemplate(statingUsages: Bool) -> [Attribute] {
        var attributes: [Attribute] = [
            .objectClass(.publicKey), .keyType(algorithm.keyType), .id(id), .label(label), .bool(.token, true), .bool(.private, false),
        ]
        if statingUsages {
            attributes += [
                .bool(.verify, usage.contains(.sign)), .bool(.encrypt, usage.contains(.decrypt)), .bool(.wrap, usage.contains(.unwrap)),
            ]
        }
        switch algorithm {
        case .ecP256: attributes.append(Attribute(.ecParams, bytes: KeyAlgorithm.p256Parameters))
        case .rsa2048:
            attributes.append(.ulong(.modulusBits, 2048))
            attributes.append(Attribute(.publicExponent, bytes: [0x01, 0x00, 0x01]))
        }
        return attributes
    }
}
