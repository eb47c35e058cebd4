import PKCS11

/// Where a merchant's usage-information sender key (HPKE's `skS`, P-384) lives: decided by the
/// capability probe, never by the key's owner.
public enum SenderKeyCustody: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// A P-384 key generated in the HSM, sensitive and never extractable; ECDH runs there.
    case inHSM = "hsm"
    /// A P-384 key derived in software from a 32-byte seed that only ever leaves the HSM wrapped
    /// by an HSM key-encrypting key (RFC 5649 or AES-GCM, as for the vault's data keys); used when
    /// the token cannot do P-384 ECDH.
    case wrappedByHSMKey = "wrapped"

    public var description: String {
        switch self {
        case .inHSM: "in the HSM"
        case .wrappedByHSMKey: "wrapped by an HSM key"
        }
    }

    /// The custody new sender keys get on this token: in the HSM when its probe passed P-384
    /// ECDH (and `forceWrapped` is off), else wrapped. Nil when neither works.
    public static func forNewKeys(_ capabilities: Capabilities, forceWrapped: Bool = false) -> SenderKeyCustody? {
        if capabilities.p384ECDHPath != nil && !forceWrapped { return .inHSM }
        return capabilities.dataKeyWrapPath != nil ? .wrappedByHSMKey : nil
    }
}
