/// Why HPKE sealing failed. The messages never carry key bytes.
public enum HPKEError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The recipient's public key is not an uncompressed point on the suite's curve.
    case invalidRecipientKey
    /// A key's public half is not of the suite's KEM.
    case keyNotOfSuite
    /// The sender key answered with a digest of the wrong length.
    case senderKeyFailed(String)
    /// The context's sequence number is spent (RFC 9180 §5.2: never reuse a nonce).
    case messageLimitReached

    public var description: String {
        switch self {
        case .invalidRecipientKey: "the recipient's public key is not an uncompressed point on the suite's curve"
        case .keyNotOfSuite: "the key is not of the suite's KEM"
        case .senderKeyFailed(let reason): "the sender key failed: \(reason)"
        case .messageLimitReached: "the HPKE context has sealed as many messages as its nonce allows"
        }
    }
}
