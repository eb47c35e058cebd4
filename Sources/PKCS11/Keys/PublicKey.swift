import Crypto
import Foundation
import _CryptoExtras

/// A public key read from the HSM.
public enum PublicKey: Sendable, Hashable {
    /// The uncompressed P-256 point (`04 ‖ X ‖ Y`).
    case ecP256(x963: [UInt8])
    case rsa(modulus: [UInt8], publicExponent: [UInt8])

    public var algorithm: KeyAlgorithm {
        switch self {
        case .ecP256: .ecP256
        case .rsa: .rsa2048
        }
    }

    /// The DER SubjectPublicKeyInfo.
    public func subjectPublicKeyInfo() throws -> [UInt8] {
        switch self {
        case .ecP256(let point):
            return Array(try P256.Signing.PublicKey(x963Representation: point).derRepresentation)
        case .rsa(let modulus, let exponent):
            return Array(try _RSA.Signing.PublicKey(n: modulus, e: exponent).derRepresentation)
        }
    }

    /// Reads `CKA_EC_POINT` (a DER OCTET STRING around the point, or the bare point from older
    /// modules) or the RSA modulus and exponent.
    init(keyType: KeyType, attributes: [AttributeType: [UInt8]]) throws(PKCS11Error) {
        switch keyType {
        case .ec:
            guard var point = attributes[.ecPoint] else { throw .invalidInput("the public key object has no CKA_EC_POINT") }
            if point.count == 67, point[0] == 0x04, point[1] == 0x41 { point.removeFirst(2) }
            guard point.count == 65, point[0] == 0x04 else {
                throw PKCS11Error(
                    code: .unsupportedKey, category: .misconfiguration, message: "the EC public key is not an uncompressed P-256 point")
            }
            self = .ecP256(x963: point)
        case .rsa:
            guard let modulus = attributes[.modulus], let exponent = attributes[.publicExponent] else {
                throw .invalidInput("the RSA public key object lacks its modulus or exponent")
            }
            self = .rsa(modulus: modulus, publicExponent: exponent)
        default:
            throw PKCS11Error(
                code: .unsupportedKey, category: .misconfiguration, message: "unsupported key type 0x\(String(keyType.rawValue, radix: 16))"
            )
        }
    }
}
