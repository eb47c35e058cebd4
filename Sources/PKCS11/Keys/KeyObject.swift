/// A private key in the token, as the layer sees it: its identity, type and the attributes that
/// prove it cannot leave the HSM.
public struct KeyObject: Sendable, Hashable {
    public let id: KeyIdentifier
    public let label: String
    public let algorithm: KeyAlgorithm
    public let publicKey: PublicKey
    public let usage: KeyUsage
    public let isSensitive: Bool
    public let isExtractable: Bool
    /// CKA_ALWAYS_SENSITIVE and CKA_NEVER_EXTRACTABLE: sensitive and non-extractable since it was
    /// made, so it was generated in the HSM and never left it (an imported key is neither).
    public let neverLeftTheHSM: Bool
    /// The handle in the current module generation; never valid after a recycle.
    let handle: ObjectHandle
}
