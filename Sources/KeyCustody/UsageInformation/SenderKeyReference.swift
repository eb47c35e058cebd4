import PKCS11

/// What is stored of a usage-information sender key: its custody, the HSM key it depends on
/// (the P-384 key itself, or the key-encrypting key of its seed), the public key, and the
/// wrapped seed when wrapped. Nothing in it is secret.
public struct SenderKeyReference: Sendable, Hashable {
    public let custody: SenderKeyCustody
    /// The P-384 key pair's id (in the HSM) or the key-encrypting key's id (wrapped).
    public let hsmKeyID: KeyIdentifier
    /// The uncompressed P-384 point (97 bytes): `merchantPublicKey` in Apple's requests.
    public let publicKey: [UInt8]
    /// The seed, wrapped by `hsmKeyID`; nil in the HSM.
    public let wrappedSeed: WrappedDataKey?

    public init(custody: SenderKeyCustody, hsmKeyID: KeyIdentifier, publicKey: [UInt8], wrappedSeed: WrappedDataKey?) {
        self.custody = custody
        self.hsmKeyID = hsmKeyID
        self.publicKey = publicKey
        self.wrappedSeed = wrappedSeed
    }
}
