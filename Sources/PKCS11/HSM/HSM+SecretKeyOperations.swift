import Synchronization

/// A data key protected by a key-encrypting key, with the path that protected it: a record keeps
/// both, so a token whose probe later picks another path still opens what the first one wrapped.
public struct WrappedDataKey: Sendable, Hashable {
    public let path: DataKeyWrapPath
    public let bytes: [UInt8]

    public init(path: DataKeyWrapPath, bytes: [UInt8]) {
        self.path = path
        self.bytes = bytes
    }
}

extension HSM {
    // MARK: Secret-key administration

    /// Generates a secret key inside the HSM (sensitive, never extractable, a token object).
    public func generateSecretKey(_ specification: SecretKeySpecification) async throws(PKCS11Error) -> SecretKeyObject {
        try await makeKey { [self] session throws(PKCS11Error) in
            try session.generateSecretKey(specification, omitting: optionalAttributesUnknown(session))
        }
    }

    /// The optional attributes secret-key templates leave out: the probe's answer, or, on a token
    /// opened without probing (an admin command), the same question asked of it now.
    private func optionalAttributesUnknown(_ session: Session) -> Set<AttributeType> {
        guard !capabilities.isProbed else { return capabilities.unknownAttributes }
        var report: [String] = []
        return CapabilityProbe.probeOptionalAttributes(session: session, report: &report)
    }

    /// Creates a secret key from a known value, protected like a generated one from then on.
    public func importSecretKey(_ value: [UInt8], as specification: SecretKeySpecification) async throws(PKCS11Error) -> SecretKeyObject {
        try await makeKey { [self] session throws(PKCS11Error) in
            try session.importSecretKey(value, as: specification, omitting: optionalAttributesUnknown(session))
        }
    }

    /// Destroys the secret key `id`; returns how many objects went.
    @discardableResult
    public func destroySecretKey(_ id: KeyIdentifier) async throws(PKCS11Error) -> Int {
        forget(id)
        let destroyed = try await withSession { session throws(PKCS11Error) in try session.destroySecretKey(id: id) }
        forget(id)  // again: an operation running meanwhile may have cached the handle anew
        return destroyed
    }

    // MARK: Secret-key operations

    /// AES-256-GCM under the key `id` with a fresh random 96-bit IV: returns IV ‖ ciphertext ‖ tag.
    public func sealAESGCM(_ id: KeyIdentifier, plaintext: [UInt8], additionalData: [UInt8]) async throws(PKCS11Error) -> [UInt8] {
        try requireCapability(capabilities.aesGCM, "AES-GCM")
        let iv = randomBytes(12)
        let sealed = try await withSecretKey(id, operation: "aes-gcm-seal") { (session, key) throws(PKCS11Error) in
            try Self.require(key, .aes256Encryption)
            return try session.encryptAESGCM(key: key.handle, iv: iv, additionalData: additionalData, plaintext: plaintext)
        }
        return iv + sealed
    }

    /// Opens what ``sealAESGCM(_:plaintext:additionalData:)`` sealed; anything else (a wrong
    /// key, a changed byte, other additional data) is bad input.
    public func openAESGCM(_ id: KeyIdentifier, sealed: [UInt8], additionalData: [UInt8]) async throws(PKCS11Error) -> [UInt8] {
        try requireCapability(capabilities.aesGCM, "AES-GCM")
        guard sealed.count >= 12 + 16 else { throw .invalidInput("an AES-GCM message is at least its IV and tag") }
        return try await withSecretKey(id, operation: "aes-gcm-open") { (session, key) throws(PKCS11Error) in
            try Self.require(key, .aes256Encryption)
            return try session.decryptAESGCM(
                key: key.handle, iv: Array(sealed.prefix(12)), additionalData: additionalData, sealed: Array(sealed.dropFirst(12)))
        }
    }

    /// The kind of key-encrypting key to generate for data keys: the wrap-only kind where the
    /// token wraps per RFC 5649, else the encryption kind for AES-GCM; nil when it offers neither.
    public var dataKeyEncryptingKeyKind: SecretKeyKind? {
        capabilities.dataKeyWrapPath?.keyEncryptingKeyKind
    }

    /// Protects `dataKey` under the key-encrypting key `id`, on the path its kind is for. On the
    /// GCM path the key's id is bound in as additional data, so a blob moved to another record's
    /// key does not open.
    public func wrapDataKey(_ id: KeyIdentifier, dataKey: [UInt8]) async throws(PKCS11Error) -> WrappedDataKey {
        // Before the key is looked for: on a token that cannot protect data keys, that is the answer.
        if let gap = capabilityGap(.dataKeyProtection) { throw .capabilityMissing(gap) }
        let (keyWrapPasses, gcmPasses) = (capabilities.dataKeyWrapPath == .aesKeyWrapPad, capabilities.aesGCM)
        return try await withSecretKey(id, operation: "aes-key-wrap") { (session, key) throws(PKCS11Error) in
            let path = try Self.dataKeyPath(for: key)
            guard path == .aesKeyWrapPad ? keyWrapPasses : gcmPasses else {
                throw .mechanismUnsupported("the token failed the \(path) probe; key \(id) cannot protect data keys here")
            }
            let bytes = try session.wrapDataKey(path: path, kek: key.handle, dataKey: dataKey, context: Self.dataKeyContext(id))
            return WrappedDataKey(path: path, bytes: bytes)
        }
    }

    /// Recovers a data key wrapped by ``wrapDataKey(_:dataKey:)``, on the path it was wrapped with.
    public func unwrapDataKey(_ id: KeyIdentifier, wrapped: WrappedDataKey) async throws(PKCS11Error) -> [UInt8] {
        try await withSecretKey(id, operation: "aes-key-unwrap") { (session, key) throws(PKCS11Error) in
            guard try Self.dataKeyPath(for: key) == wrapped.path else {
                throw .invalidInput("key \(id) is \(key.kind.rawValue); it did not wrap a data key on \(wrapped.path)")
            }
            return try session.unwrapDataKey(path: wrapped.path, kek: key.handle, wrapped: wrapped.bytes, context: Self.dataKeyContext(id))
        }
    }

    private static func dataKeyPath(for key: SecretKeyObject) throws(PKCS11Error) -> DataKeyWrapPath {
        switch key.kind {
        case .aes256KeyWrap: return .aesKeyWrapPad
        case .aes256Encryption: return .aesGCM
        case .hmacSHA256: throw .invalidInput("key \(key.id) is an HMAC key; it cannot protect data keys")
        }
    }

    private static func dataKeyContext(_ id: KeyIdentifier) -> [UInt8] {
        Array("paywarden data key v1".utf8) + id.bytes
    }

    /// HMAC-SHA256 of `data` under the secret key `id`, computed in the HSM.
    public func hmacSHA256(_ id: KeyIdentifier, data: [UInt8]) async throws(PKCS11Error) -> [UInt8] {
        try await withHMACSHA256(id) { mac throws(PKCS11Error) in try mac(data) }
    }

    /// HMAC-SHA256 under the secret key `id` inside one HSM job: `body` runs on the job's thread
    /// with a function computing MACs, so a caller can hold its own lock across a MAC and what it
    /// does with it (the audit chain writes each line in the order of the MACs it chains). `body`
    /// runs again when the job is retried (a stale handle, a lost login): it must not have acted
    /// before a MAC it asked for was returned.
    public func withHMACSHA256<R: Sendable>(
        _ id: KeyIdentifier, _ body: @escaping @Sendable (_ mac: ([UInt8]) throws(PKCS11Error) -> [UInt8]) throws(PKCS11Error) -> R
    ) async throws(PKCS11Error) -> R {
        if let gap = capabilityGap(.hmacSHA256) { throw .capabilityMissing(gap) }
        // Unprobed (an admin command), the module's answer to the mechanism is the probe.
        try requireCapability(capabilities.hmacSHA256 || !capabilities.isProbed, "HMAC-SHA256")
        return try await withSecretKey(id, operation: "hmac-sha256") { (session, key) throws(PKCS11Error) in
            try Self.require(key, .hmacSHA256)
            return try body { data throws(PKCS11Error) in try session.hmacSHA256(key: key.handle, data: data) }
        }
    }

    private func requireCapability(_ available: Bool, _ name: String) throws(PKCS11Error) {
        guard available else { throw .mechanismUnsupported("the token does not offer \(name) (see the capability probe)") }
    }

    private static func require(_ key: SecretKeyObject, _ kind: SecretKeyKind) throws(PKCS11Error) {
        guard key.kind == kind else { throw .invalidInput("key \(key.id) is \(key.kind.rawValue), not \(kind.rawValue)") }
    }
}
