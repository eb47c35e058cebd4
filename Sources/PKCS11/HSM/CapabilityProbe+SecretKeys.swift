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
        var keyNotes: [String] = []
        defer { note(keyNotes, in: &report) }
        return attempt("AES-GCM", report: &report) {
            let key = try probeSecretKey(session, .aes, usage: [.bool(.encrypt, true), .bool(.decrypt, true)], notes: &keyNotes)
            defer { try? session.destroyObject(key.handle) }
            let sealed = try session.encryptAESGCM(key: key.handle, iv: knownIV, additionalData: knownAAD, plaintext: knownPlaintext)
            if let value = key.value {
                let expected = try AES.GCM.seal(
                    knownPlaintext, using: SymmetricKey(data: value), nonce: AES.GCM.Nonce(data: knownIV), authenticating: knownAAD
                )
                guard sealed == Array(expected.ciphertext) + Array(expected.tag) else {
                    return "the token's ciphertext differs from software"
                }
            } else {
                guard sealed.count == knownPlaintext.count + 16 else {
                    return "the token's ciphertext is not the plaintext and a 16-byte tag"
                }
                let otherIV = knownIV.map { $0 ^ 0x5A }
                let again = try session.encryptAESGCM(key: key.handle, iv: otherIV, additionalData: knownAAD, plaintext: knownPlaintext)
                guard again != sealed else { return "the token ignored the IV" }
            }
            guard try session.decryptAESGCM(key: key.handle, iv: knownIV, additionalData: knownAAD, sealed: sealed) == knownPlaintext else {
                return "decryption returned other bytes"
            }
            let wrongAAD = Array("record 43".utf8)
            guard (try? session.decryptAESGCM(key: key.handle, iv: knownIV, additionalData: wrongAAD, sealed: sealed)) == nil else {
                return "the token accepted the wrong additional data"
            }
            var tampered = sealed
            tampered[tampered.count - 1] ^= 1
            guard (try? session.decryptAESGCM(key: key.handle, iv: knownIV, additionalData: knownAAD, sealed: tampered)) == nil else {
                return "the token accepted a changed tag"
            }
            return nil
        }
    }

    /// RFC 5649 key wrap, checked against OpenSSL's; else AES-GCM inside the HSM when that passed.
    static func probeDataKeyWrap(session: Session, aesGCM: Bool, report: inout [String]) -> DataKeyWrapPath? {
        let dataKey = Array(knownKey.reversed())
        // A known-value KEK only: wrapping makes the data key an object from its value, which a
        // token that makes no key from a value refuses anyway.
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
        var keyNotes: [String] = []
        defer { note(keyNotes, in: &report) }
        return attempt("HMAC-SHA256", report: &report) {
            let key = try probeSecretKey(session, .genericSecret, usage: [.bool(.sign, true), .bool(.verify, true)], notes: &keyNotes)
            defer { try? session.destroyObject(key.handle) }
            let mac = try session.hmacSHA256(key: key.handle, data: message)
            if let value = key.value {
                let expected = Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: value)))
                return mac == expected ? nil : "the token's MAC differs from software"
            }
            guard mac.count == 32, try session.hmacSHA256(key: key.handle, data: message) == mac else {
                return "the token's MAC is not 32 bytes, or not the same twice"
            }
            return try session.hmacSHA256(key: key.handle, data: message + [0]) == mac ? "the token's MAC ignores the message" : nil
        }
    }

    /// Asks the token, of a throw-away key, for each optional attribute secret-key templates carry;
    /// those it does not know (`CKR_ATTRIBUTE_TYPE_INVALID`) are left out of templates, since some
    /// tokens then refuse the whole key (NSS softokn fails a token key naming `CKA_COPYABLE`).
    static func probeOptionalAttributes(session: Session, report: inout [String]) -> Set<AttributeType> {
        var unknown: Set<AttributeType> = []
        do {
            let key = try probeSecretKey(session, .aes, usage: [.bool(.encrypt, true), .bool(.decrypt, true)], notes: &report)
            defer { try? session.destroyObject(key.handle) }
            for type in SecretKeySpecification.optionalAttributes.sorted(by: { $0.rawValue < $1.rawValue })
            where try !session.knowsAttribute(type, of: key.handle) {
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

    /// How a probe's report says that neither way of making a secret key worked.
    static let makesNoSecretKey = "the token makes no"

    /// A throw-away secret key for one probe, which the caller destroys, and its value when known.
    struct ProbeSecretKey {
        let handle: ObjectHandle
        /// The known value it was made from, so the token's answers can be compared with
        /// software's; nil for a key the token generated, whose answers are checked for
        /// consistency only (it is sensitive, as every key Paywarden makes).
        let value: [UInt8]?
    }

    /// A session key made from the known value; where the token makes no key from a value
    /// (FIPS-mode HSMs may refuse one), a key it generates, as a session object or, on a module
    /// that refuses those, a token object. The report says which, once.
    static func probeSecretKey(
        _ session: Session, _ type: KeyType, usage: [Attribute], notes: inout [String]
    ) throws(PKCS11Error) -> ProbeSecretKey {
        let fromValue: PKCS11Error
        do {
            return ProbeSecretKey(handle: try session.createObject(sessionSecretKey(type, usage: usage)), value: knownKey)
        } catch  where isRefusal(error) {
            fromValue = error
        }
        let mechanism: Mechanism = type == .aes ? .aesKeyGeneration : .genericSecretKeyGeneration
        let template: [Attribute] =
            [
                .objectClass(.secretKey), .keyType(type), .label("paywarden-capability-probe"), .bool(.sensitive, true),
                .bool(.extractable, false), .ulong(.valueLength, SecretKeyKind.valueLength),
            ] + usage
        let handle: ObjectHandle
        var asTokenObject = false
        do {
            do {
                handle = try session.generateKey(mechanism, template: template + [.bool(.token, false)])
            } catch  where refusesSessionObject(error) {
                handle = try session.generateKey(mechanism, template: template + [.bool(.token, true)])
                asTokenObject = true
            }
        } catch  where isRefusal(error) {
            // Refused both ways: the module's answer, not a fault of the moment.
            throw PKCS11Error(
                code: .mechanismUnsupported, category: .misconfiguration,
                message: "\(makesNoSecretKey) \(type == .aes ? "AES" : "generic secret") key: from a value \(reason(fromValue)), "
                    + "generated \(reason(error))")
        }
        let line =
            "secret probe keys: the token made no key from a value (\(reason(fromValue))); probed with keys it generated"
            + (asTokenObject ? " as token objects, destroyed afterwards" : "") + ", checked for consistency only"
        if !notes.contains(line) { notes.append(line) }
        return ProbeSecretKey(handle: handle, value: nil)
    }

    /// What a module answers a key it will not make: a template or mechanism it does not take.
    /// Anything else (a device error) is the probe's failure, not an answer about keys.
    private static func isRefusal(_ error: PKCS11Error) -> Bool {
        guard let value = error.returnValue else { return false }
        return [
            .attributeValueInvalid, .attributeTypeInvalid, .templateInconsistent, .templateIncomplete, .attributeReadOnly,
            .functionNotSupported, .mechanismInvalid, .keyTypeInconsistent,
        ].contains(value)
    }

    /// Adds the notes a probe's keys left that the report does not have yet.
    private static func note(_ notes: [String], in report: inout [String]) {
        for line in notes where !report.contains(line) { report.append(line) }
    }

    /// A throw-away session key with the known value; its value is not secret.
    private static func sessionSecretKey(_ type: KeyType, usage: [Attribute]) -> [Attribute] {
        [
            .objectClass(.secretKey), .keyType(type), .bool(.token, false), .bool(.sensitive, false),
            .bool(.extractable, false), Attribute(.value, bytes: knownKey),
        ] + usage
    }
}
