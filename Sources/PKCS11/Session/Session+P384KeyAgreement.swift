import Crypto

/// P-384 key agreement for HPKE (merchant-token usage information): a key pair made in the HSM
/// and ECDH whose secret is hashed where it was computed.
extension Session {
    /// DER of the named-curve OID 1.3.132.0.34 (secp384r1), the `CKA_EC_PARAMS` value.
    static let p384Parameters: [UInt8] = [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22]

    /// Generates a P-384 key pair for ECDH only: the private half sensitive, never extractable,
    /// `CKA_DERIVE` and nothing else. Token objects unless `token` is false (the probe's).
    public func generateP384KeyAgreementKeyPair(
        id: KeyIdentifier, label: String, token: Bool = true
    ) throws(PKCS11Error) -> (publicKey: ObjectHandle, privateKey: ObjectHandle) {
        if token {
            guard try tokenObjects(.privateKey, id: id).isEmpty, try tokenObjects(.publicKey, id: id).isEmpty else {
                throw .invalidInput("a key with id \(id) already exists in the token")
            }
        }
        let (publicHandle, privateHandle) = try generateKeyPair(
            .ecKeyPairGeneration,
            publicKey: [
                .objectClass(.publicKey), .keyType(.ec), .id(id), .label(label), .bool(.token, token), .bool(.private, false),
                .bool(.verify, false), Attribute(.ecParams, bytes: Self.p384Parameters),
            ],
            privateKey: [
                .objectClass(.privateKey), .keyType(.ec), .id(id), .label(label), .bool(.token, token), .bool(.private, true),
                .bool(.sensitive, true), .bool(.extractable, false), .bool(.derive, true), .bool(.sign, false),
                .bool(.decrypt, false), .bool(.unwrap, false),
            ]
        )
        return (publicHandle, privateHandle)
    }

    /// The uncompressed point (97 bytes) of a P-384 public key object.
    public func p384Point(of publicKey: ObjectHandle) throws(PKCS11Error) -> [UInt8] {
        guard var point = try attributes(of: publicKey, [.ecPoint])[.ecPoint] else {
            throw .invalidInput("the public key object has no CKA_EC_POINT")
        }
        // A DER OCTET STRING around the point, or the bare point from older modules.
        if point.count == 99, point[0] == 0x04, point[1] == 0x61 { point.removeFirst(2) }
        guard point.count == 97, point[0] == 0x04, (try? P384.KeyAgreement.PublicKey(x963Representation: point)) != nil else {
            throw PKCS11Error(code: .unsupportedKey, category: .misconfiguration, message: "the EC public key is not a P-384 point")
        }
        return point
    }

    /// `SHA-384(prefix ‖ Z)` where Z (48 bytes) is ECDH between `privateKey` and `peerPoint`.
    /// Every object derived on the way is destroyed.
    public func sha384OfP384SharedSecret(
        path: P384ECDHPath, privateKey: ObjectHandle, peerPoint: [UInt8], prefix: [UInt8]
    ) throws(PKCS11Error) -> [UInt8] {
        let extractable = path == .extractableSecret
        let z = try deriveKey(
            .ecdh1Derive(kdf: .null, sharedData: [], publicData: peerPoint),
            base: privateKey, template: Self.derivedSecretTemplate(extractable: extractable, length: 48)
        )
        defer { try? destroyObject(z) }
        switch path {
        case .extractableSecret:
            return Array(SHA384.hash(data: prefix + (try secretValue(z))))
        case .digestKey:
            try digestInit(.sha384)
            do {
                try digestUpdate(prefix)
                try digestKey(z)
                return try digestFinal()
            } catch {
                endDigestOperation()
                throw error
            }
        }
    }
}
