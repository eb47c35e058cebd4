/// A record's payload encrypted at rest: AES-256-GCM under a data key, the data key wrapped by a
/// key-encrypting key that lives in the HSM. Only this reaches the database.
public struct SealedPayload: Sendable, Hashable {
    /// The key-encrypting key's id (its `CKA_ID`), so rotation can find what it wrapped.
    public var keyID: String
    /// How the data key was wrapped (`aes-key-wrap-pad` or `aes-gcm`).
    public var wrapPath: String
    public var wrappedKey: [UInt8]
    /// IV ‖ ciphertext ‖ tag.
    public var ciphertext: [UInt8]
    /// The payload's format version, so a later build can read what an earlier one wrote.
    public var version: Int

    public init(keyID: String, wrapPath: String, wrappedKey: [UInt8], ciphertext: [UInt8], version: Int) {
        self.keyID = keyID
        self.wrapPath = wrapPath
        self.wrappedKey = wrappedKey
        self.ciphertext = ciphertext
        self.version = version
    }
}
