import COpenSSLShim
import Crypto
import Foundation

/// A private key held in software, parsed only to be imported into the HSM.
///
/// Parsing goes through OpenSSL, which reads every container an operator is likely to hold:
/// PEM or DER PKCS#8, SEC1 (with or without a leading `EC PARAMETERS` block), PKCS#1, and
/// PKCS#12 including legacy RC2-encrypted files.
public struct SoftwarePrivateKey: Sendable {
    enum Material: Sendable {
        case ecP256(scalar: [UInt8])
        case rsa(RSAComponents)
    }

    struct RSAComponents: Sendable {
        var modulus, publicExponent, privateExponent, prime1, prime2, exponent1, exponent2, coefficient: [UInt8]
    }

    let material: Material
    /// The DER certificate a PKCS#12 file carried with the key, if any.
    public let certificate: [UInt8]?

    public var algorithm: KeyAlgorithm {
        switch material {
        case .ecP256: .ecP256
        case .rsa: .rsa2048
        }
    }

    /// Parses a PEM or DER private key.
    public init(pemOrDER data: [UInt8]) throws(PKCS11Error) {
        self = try data.withUnsafeBufferPointer { (bytes) throws(PKCS11Error) in try SoftwarePrivateKey(pemOrDERBytes: bytes) }
    }

    /// Parses a PKCS#12 file.
    public init(pkcs12 data: [UInt8], password: String) throws(PKCS11Error) {
        self = try data.withUnsafeBufferPointer { (bytes) throws(PKCS11Error) in
            try SoftwarePrivateKey(pkcs12Bytes: bytes, password: password)
        }
    }

    // OpenSSL takes int lengths: the shim refuses a length over INT_MAX before reading anything
    // rather than truncate it. Tests reach that check here, with a buffer claiming such a length.

    init(pemOrDERBytes bytes: UnsafeBufferPointer<UInt8>) throws(PKCS11Error) {
        var parsed = pw_private_key()
        let status = pw_parse_private_key(bytes.baseAddress, bytes.count, &parsed)
        defer { pw_private_key_free(&parsed) }
        try Self.checkParse(status, what: "private key file")
        try self.init(parsed)
    }

    init(pkcs12Bytes bytes: UnsafeBufferPointer<UInt8>, password: String) throws(PKCS11Error) {
        var parsed = pw_private_key()
        let status = pw_parse_pkcs12(bytes.baseAddress, bytes.count, password, &parsed)
        defer { pw_private_key_free(&parsed) }
        try Self.checkParse(status, what: "PKCS#12 file")
        try self.init(parsed)
    }

    private init(_ parsed: pw_private_key) throws(PKCS11Error) {
        func bytes(_ b: pw_bytes) -> [UInt8] { Array(UnsafeBufferPointer(start: b.data, count: b.length)) }
        var parsed = parsed
        certificate = parsed.certificate.length > 0 ? bytes(parsed.certificate) : nil
        switch Int(parsed.kind) {
        case Int(PW_KEY_EC.rawValue):
            let curve = withUnsafeBytes(of: &parsed.curve) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard curve == "prime256v1" || curve == "P-256" || curve == "secp256r1" else {
                throw PKCS11Error(
                    code: .unsupportedKey, category: .badInput,
                    message: "the EC key is on curve \(curve); Apple Pay processing keys are P-256")
            }
            material = .ecP256(scalar: bytes(parsed.ec_private))
        case Int(PW_KEY_RSA.rawValue):
            let components = RSAComponents(
                modulus: bytes(parsed.rsa_n), publicExponent: bytes(parsed.rsa_e), privateExponent: bytes(parsed.rsa_d),
                prime1: bytes(parsed.rsa_p), prime2: bytes(parsed.rsa_q), exponent1: bytes(parsed.rsa_dp),
                exponent2: bytes(parsed.rsa_dq), coefficient: bytes(parsed.rsa_qinv)
            )
            guard components.modulus.count * 8 >= 2048 else {
                throw PKCS11Error(
                    code: .unsupportedKey, category: .badInput,
                    message: "the RSA key has \(components.modulus.count * 8) bits; at least 2048 are required")
            }
            material = .rsa(components)
        default:
            throw PKCS11Error(code: .unsupportedKey, category: .badInput, message: "the key is neither EC nor RSA")
        }
    }

    private static func checkParse(_ status: Int32, what: String) throws(PKCS11Error) {
        switch status {
        case Int32(PW_PARSE_OK.rawValue):
            return
        case Int32(PW_PARSE_BAD_PASSWORD.rawValue):
            throw PKCS11Error(
                code: .invalidInput, category: .badInput,
                message: "the \(what) could not be opened with the given password; check the password file")
        case Int32(PW_PARSE_UNSUPPORTED_KEY.rawValue):
            throw PKCS11Error(
                code: .unsupportedKey, category: .badInput, message: "the \(what) holds a key that is neither EC P-256 nor RSA")
        default:
            throw PKCS11Error(
                code: .invalidInput, category: .badInput,
                message: "the \(what) is not a readable private key (PEM or DER PKCS#8, SEC1, PKCS#1, or PKCS#12)")
        }
    }

    /// The public half, computed from the private material.
    public func publicKey() throws -> PublicKey {
        switch material {
        case .ecP256(let scalar):
            return .ecP256(x963: Array(try P256.Signing.PrivateKey(rawRepresentation: scalar).publicKey.x963Representation))
        case .rsa(let components):
            return .rsa(modulus: components.modulus, publicExponent: components.publicExponent)
        }
    }

    /// Attributes carrying the private material, for `C_CreateObject`.
    var privateAttributes: [Attribute] {
        switch material {
        case .ecP256(let scalar):
            return [Attribute(.ecParams, bytes: KeyAlgorithm.p256Parameters), Attribute(.value, bytes: scalar)]
        case .rsa(let c):
            return [
                Attribute(.modulus, bytes: c.modulus), Attribute(.publicExponent, bytes: c.publicExponent),
                Attribute(.privateExponent, bytes: c.privateExponent), Attribute(.prime1, bytes: c.prime1),
                Attribute(.prime2, bytes: c.prime2), Attribute(.exponent1, bytes: c.exponent1),
                Attribute(.exponent2, bytes: c.exponent2), Attribute(.coefficient, bytes: c.coefficient),
            ]
        }
    }
}
