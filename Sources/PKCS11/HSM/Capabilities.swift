/// What the token can do, found by probing it at start-up with throw-away session keys.
public struct Capabilities: Sendable, Hashable {
    /// The ECDH path in use, or nil when the token offers none that configuration allows.
    public let ecdhPath: ECDHPath?
    /// The RSA-OAEP path in use, or nil when none is available or allowed.
    public let rsaDecryptionPath: RSADecryptionPath?
    /// The mechanisms the token lists.
    public let mechanisms: Set<MechanismType>
    /// One line per path tried, with the reason a path was not taken.
    public let report: [String]
}
