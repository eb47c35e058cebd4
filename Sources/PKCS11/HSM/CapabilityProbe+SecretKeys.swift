import COpenSSLShim
import Crypto

/// The secret-key probes: each runs on session keys made from known values, so the token's
/// answer can be compared byte for byte with software's (swift-crypto, OpenSSL for RFC 5649).
extension CapabilityProbe {
    private static let knownKey: [UInt8] = (0..<32).map { UInt8($0) }
    private static let knownIV: [UInt8] = (0..<12).map { UInt8(0xA0 + $0) }
    private static let knownPlaintext = Array("capability probe: AES-256-GCM with additional data".utf8)
    private static let knownAAD = Array("record 42".utf8)

    static func probeAESGCM(session: Session, report: inout [String]) -> Bool {
        attempt("AES-GCM", report: &report) {
            let key = try session.createObject(sessionSecretKey(.aes, usage: [.bool(.encrypt, true), .bool(.decrypt, true)]))
            defer { try? session.destroyObject(key) }
            let sealed = try session.encryptAESGCM(key: key, iv: knownIV, additionalData: knownAAD, plaintext: knownPlaintext)
            let expected = try AES.GCM.seal(
                knownPlaintext, using: SymmetricKey(data: knownKey), nonce: AES.GCM.Nonce(data: knownIV), authenticating: knownAAD
            )
            guard sealed == Array(expected.ciphertext) + Array(expected.tag) else { return "the token's ciphertext differs from software" }
            guard try session.decryptAESGCM(key: key, iv: knownIV, additionalData: knownAAD, sealed: sealed) == knownPlaintext else {
                return "decryption returned other bytes"
            }
            let wrongAAD = Array("record 43".utf8)
            guard (try? session.decryptAESGCM(key: key, iv: knownIV, additionalData: wrongAAD, sealed: sealed)) == nil else {
                return "the token accepted the wrong additional data"
            }
            return nil
        }
    }

    /// RFC 5649 key wrap, checked against OpenSSL's; else AES-GCM inside the HSM when that passed.
    static func probeDataKeyWrap(session: Session, aesGCM: Bool, report: inout [String]) -> DataKeyWrapPath? {
        let dataKey = Array(knownKey.reversed())
        let wrapsPerRFC5649 = attempt("data keys: \(DataKeyWrapPath.aesKeyWrapPad)", report: &report) {
            let kek = try session.createObject(sessionSecretKey(.aes, usage: [.bool(.wrap, true), .bool(.unwrap, true)]))
            defer { try? session.destroyObject(kek) }
            let wrapped = try session.wrapDataKey(path: .aesKeyWrapPad, kek: kek, dataKey: dataKey, context: [])
            var expected = [UInt8](repeating: 0, count: 64)
            let length = knownKey.withUnsafeBufferPointer { kekBytes in
                dataKey.withUnsafeBufferPointer { input in
                    expected.withUnsafeMutableBufferPointer {
                        pw_aes256_wrap_pad(kekBytes.baseAddress, input.baseAddress, input.count, $0.baseAddress, $0.count)
                    }
                }
            }
            guard length > 0, wrapped == Array(expected.prefix(Int(length))),
                try session.unwrapDataKey(path: .aesKeyWrapPad, kek: kek, wrapped: wrapped, context: []) == dataKey
            else { return "the token's wrapping differs from RFC 5649" }
            return nil
        }
        if wrapsPerRFC5649 { return .aesKeyWrapPad }
        guard aesGCM else {
            report.append("data keys: \(DataKeyWrapPath.aesGCM): unsupported (AES-GCM failed its probe)")
            return nil
        }
        report.append("data keys: \(DataKeyWrapPath.aesGCM): in use")
        return .aesGCM
    }

    static func probeHMAC(session: Session, report: inout [String]) -> Bool {
        let message = Array("capability probe: HMAC-SHA256".utf8)
        return attempt("HMAC-SHA256", report: &report) {
            let key = try session.createObject(sessionSecretKey(.genericSecret, usage: [.bool(.sign, true), .bool(.verify, true)]))
            defer { try? session.destroyObject(key) }
            let mac = try session.hmacSHA256(key: key, data: message)
            let expected = Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: knownKey)))
            return mac == expected ? nil : "the token's MAC differs from software"
        }
    }

    /// Asks the token, of a throw-away key, for each optional attribute secret-key templates carry;
    /// those it does not know (`CKR_ATTRIBUTE_TYPE_INVALID`) are left out of templates, since some
    /// tokens then refuse the whole key (NSS softokn fails a token key naming `CKA_COPYABLE`).
    static func probeOptionalAttributes(session: Session, report: inout [String]) -> Set<AttributeType> {
        var unknown: Set<AttributeType> = []
        do {
            let key = try session.createObject(sessionSecretKey(.aes, usage: [.bool(.encrypt, true), .bool(.decrypt, true)]))
            defer { try? session.destroyObject(key) }
            for type in SecretKeySpecification.optionalAttributes.sorted(by: { $0.rawValue < $1.rawValue })
            where try !session.knowsAttribute(type, of: key) {
                unknown.insert(type)
            }
        } catch {
            report.append("attributes: probe failed (\(reason(error))); secret keys are made with every attribute")
            return []
        }
        report.append(
            unknown.contains(.copyable)
                ? "CKA_COPYABLE: unknown to the token; secret keys are made without it (a copy keeps CKA_SENSITIVE and "
                    + "CKA_EXTRACTABLE)"
                : "CKA_COPYABLE: FALSE on every secret key")
        return unknown
    }

    /// A throw-away session key with the known value; its value is not secret.
    private static func sessionSecretKey(_ type: KeyType, usage: [Attribute]) -> [Attribute] {
        [
            .objectClass(.secretKey), .keyType(type), .bool(.token, false), .bool(.sensitive, false),
            .bool(.extractable, false), Attribute(.value, bytes: knownKey),
        ] + usage
    }
}
