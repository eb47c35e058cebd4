/// What a key Paywarden keeps in the HSM is for: an Apple Pay merchant key, or the client key of
/// a processor upstream's mutual TLS.
public enum KeyPurpose: String, Sendable, Hashable, Codable, CaseIterable {
    /// The key behind a Payment Processing Certificate: Apple encrypts payments to it.
    /// EC P-256 (global) or RSA-2048 (China mainland, RSA_v1).
    case processing
    /// The key behind a Merchant Identity Certificate: a TLS client key for mutual TLS to Apple.
    /// RSA-2048.
    case identity
    /// A TLS client key for mutual TLS to a processor upstream (the relay): the processor's CA,
    /// not Apple, certifies it. RSA-2048, the handshake signed in the HSM as the identity key's is.
    case upstream

    /// The algorithms Apple accepts for this purpose (for upstream keys: what the HSM-backed TLS
    /// signer offers).
    public var allowedAlgorithms: [KeyAlgorithmChoice] {
        switch self {
        case .processing: [.ec, .rsa]
        case .identity, .upstream: [.rsa]
        }
    }

    public var defaultAlgorithm: KeyAlgorithmChoice {
        switch self {
        case .processing: .ec
        case .identity, .upstream: .rsa
        }
    }
}

/// The `--type` an admin chooses.
public enum KeyAlgorithmChoice: String, Sendable, Hashable, Codable, CaseIterable {
    case ec
    case rsa
}
