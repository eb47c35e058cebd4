/// Secret keys: generation, import of known values (tests, migrations), look-up, and the
/// operations the vault needs, all with the key inside the HSM.
extension Session {
    /// Generates a secret key inside the HSM: a private token object, sensitive, never
    /// extractable, with only its kind's usages.
    /// - Parameter unknown: optional attributes the token does not know (``Capabilities/unknownAttributes``).
    public func generateSecretKey(_ specification: SecretKeySpecification, omitting unknown: Set<AttributeType> = [])
        throws(PKCS11Error) -> SecretKeyObject
    {
        try requireUnusedID(specification.id)
        let handle = try generateKey(
            specification.kind.generation,
            template: specification.template(omitting: unknown) + [.ulong(.valueLength, SecretKeyKind.valueLength)]
        )
        return try checkedSecretKey(handle)
    }

    /// Creates a secret key from a known value, protected as a generated one (sensitive, never
    /// extractable from now on). For known-answer tests and migrations; the value is wiped from
    /// the template buffer after the call.
    public func importSecretKey(_ value: [UInt8], as specification: SecretKeySpecification, omitting unknown: Set<AttributeType> = [])
        throws(PKCS11Error) -> SecretKeyObject
    {
        guard value.count == Int(SecretKeyKind.valueLength) else {
            throw .invalidInput("a \(specification.kind.rawValue) key is \(SecretKeyKind.valueLength) bytes, not \(value.count)")
        }
        try requireUnusedID(specification.id)
        let handle = try createObject(specification.template(omitting: unknown) + [Attribute(.value, bytes: value)])
        return try checkedSecretKey(handle)
    }

    /// A `CKA_ID` names one secret key: a second one would make look-ups by id ambiguous.
    private func requireUnusedID(_ id: KeyIdentifier) throws(PKCS11Error) {
        guard try tokenObjects(.secretKey, id: id).isEmpty else {
            throw .invalidInput("a secret key with id \(id) already exists in the token")
        }
    }

    /// Every secret key in the token with a known kind (token objects only).
    public func secretKeys() throws(PKCS11Error) -> [SecretKeyObject] {
        var keys: [SecretKeyObject] = []
        for handle in try tokenObjects(.secretKey) {
            do {
                if let key = try secretKeyObject(handle) { keys.append(key) }
            } catch  where error.returnValue == .objectHandleInvalid {
                continue  // destroyed between the find and the read: no longer in the token
            }
        }
        return keys
    }

    /// The secret key with `id`, or nil.
    public func secretKey(id: KeyIdentifier) throws(PKCS11Error) -> SecretKeyObject? {
        guard let handle = try tokenObjects(.secretKey, id: id).first else { return nil }
        return try secretKeyObject(handle)
    }

    /// Destroys the secret key with `id`. Returns how many objects were destroyed.
    @discardableResult
    public func destroySecretKey(id: KeyIdentifier) throws(PKCS11Error) -> Int {
        try destroyTokenObjects([.secretKey], id: id)
    }

    // MARK: Operations

    /// AES-GCM encryption under `key` with a 96-bit `iv` and `additionalData`; returns the
    /// ciphertext followed by the 16-byte tag.
    public func encryptAESGCM(key: ObjectHandle, iv: [UInt8], additionalData: [UInt8], plaintext: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        try encrypt(.aesGCM(iv: iv, additionalData: additionalData, tagBits: 128), key: key, data: plaintext)
    }

    /// AES-GCM decryption of ciphertext ‖ tag. A wrong key, IV, tag or additional data is bad
    /// input (`CKR_ENCRYPTED_DATA_INVALID`, or SoftHSM's `CKR_GENERAL_ERROR`).
    public func decryptAESGCM(key: ObjectHandle, iv: [UInt8], additionalData: [UInt8], sealed: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        guard sealed.count >= 16 else { throw .invalidInput("an AES-GCM ciphertext is at least its 16-byte tag") }
        return try decrypt(.aesGCM(iv: iv, additionalData: additionalData, tagBits: 128), key: key, data: sealed)
    }

    /// HMAC-SHA256 of `data` under `key`.
    public func hmacSHA256(key: ObjectHandle, data: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        try sign(.sha256HMAC, key: key, data: data)
    }

    /// Protects `dataKey` under the key-encrypting key `kek` on `path`. The result is what
    /// ``unwrapDataKey(path:kek:wrapped:context:)`` takes back: the RFC 5649 wrapping, or IV ‖ GCM
    /// ciphertext ‖ tag with `context` (the caller's binding: key id, purpose) as additional data.
    public func wrapDataKey(path: DataKeyWrapPath, kek: ObjectHandle, dataKey: [UInt8], context: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        guard DataKeyWrapPath.dataKeyLengths.contains(dataKey.count) else {
            throw .invalidInput("a data key is an AES key of 16, 24 or 32 bytes, not \(dataKey.count)")
        }
        switch path {
        case .aesKeyWrapPad:
            // The data key becomes a short-lived session object just long enough to be wrapped.
            // No CKA_VALUE_LEN beside CKA_VALUE: SoftHSM calls it read-only, and leaves the half-made
            // object behind when it refuses.
            let object = try createObject(Self.dataKeyTemplate + [Attribute(.value, bytes: dataKey)])
            defer { try? destroyObject(object) }
            return try wrapKey(.aesKeyWrapPad, wrappingKey: kek, key: object)
        case .aesGCM:
            let iv = Array(randomBytes(12))
            return iv + (try encryptAESGCM(key: kek, iv: iv, additionalData: context, plaintext: dataKey))
        }
    }

    /// Recovers a data key protected by ``wrapDataKey(path:kek:dataKey:context:)``. Anything that
    /// does not open under `kek` (and, on the GCM path, `context`) is bad input.
    public func unwrapDataKey(path: DataKeyWrapPath, kek: ObjectHandle, wrapped: [UInt8], context: [UInt8]) throws(PKCS11Error) -> [UInt8] {
        switch path {
        case .aesKeyWrapPad:
            let object = try unwrapKey(.aesKeyWrapPad, unwrappingKey: kek, wrapped: wrapped, template: Self.dataKeyTemplate)
            defer { try? destroyObject(object) }
            return try secretValue(object)
        case .aesGCM:
            guard wrapped.count > 12 + 16 else { throw .invalidInput("the wrapped data key is too short") }
            let dataKey = try decryptAESGCM(
                key: kek, iv: Array(wrapped.prefix(12)), additionalData: context, sealed: Array(wrapped.dropFirst(12)))
            guard DataKeyWrapPath.dataKeyLengths.contains(dataKey.count) else {
                throw .invalidInput("the unwrapped data key has the wrong length")
            }
            return dataKey
        }
    }

    /// A session object carrying a data key in transit: extractable by design, since the data key
    /// is used in software; it lives for one call.
    private static let dataKeyTemplate: [Attribute] = [
        .objectClass(.secretKey), .keyType(.aes), .bool(.token, false), .bool(.private, true),
        .bool(.sensitive, false), .bool(.extractable, true),
    ]

    // MARK: Reading

    /// Reads the key and refuses one the token did not make sensitive and non-extractable.
    private func checkedSecretKey(_ handle: ObjectHandle) throws(PKCS11Error) -> SecretKeyObject {
        do throws(PKCS11Error) {
            guard let key = try secretKeyObject(handle), key.isSensitive, !key.isExtractable else {
                throw PKCS11Error(
                    code: .unsupportedKey, category: .misconfiguration, function: "C_GetAttributeValue",
                    message: "the token made a secret key that is not sensitive and non-extractable")
            }
            return key
        } catch {
            try? destroyObject(handle)
            throw error
        }
    }

    private func secretKeyObject(_ handle: ObjectHandle) throws(PKCS11Error) -> SecretKeyObject? {
        let attributes = try attributes(
            of: handle,
            [
                .id, .label, .keyType, .sensitive, .extractable, .alwaysSensitive, .neverExtractable, .valueLength, .sign, .wrap,
                .encrypt,
            ])
        let keyType = KeyType(rawValue: attributes[.keyType].map(Self.ulong) ?? UInt.max)
        let kind: SecretKeyKind
        switch keyType {
        case .aes where Self.bool(attributes[.wrap]): kind = .aes256KeyWrap
        case .aes where Self.bool(attributes[.encrypt]): kind = .aes256Encryption
        case .genericSecret where Self.bool(attributes[.sign]): kind = .hmacSHA256
        default: return nil
        }
        guard attributes[.valueLength].map(Self.ulong) == SecretKeyKind.valueLength else { return nil }
        return SecretKeyObject(
            id: KeyIdentifier(bytes: attributes[.id] ?? []),
            label: String(decoding: attributes[.label] ?? [], as: UTF8.self),
            kind: kind,
            isSensitive: Self.bool(attributes[.sensitive]),
            isExtractable: Self.bool(attributes[.extractable]),
            neverLeftTheHSM: Self.bool(attributes[.alwaysSensitive]) && Self.bool(attributes[.neverExtractable]),
            handle: handle
        )
    }
}

/// Random bytes from the system CSPRNG.
func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
}
