/// What an Apple Pay merchant key is for.
public enum KeyPurpose: String, Sendable, Hashable, Codable, CaseIterable {
    /// The key behind a Payment Processing Certificate: Apple encrypts payments to it.
    /// EC P-256 (global) or RSA-2048 (China mainland, RSA_v1).
    case processing
    /// The key behind a Merchant Identity Certificate: a TLS client key for mutual TLS to Apple.
    /// RSA-2048.
    case identity

    /// The algorithms Apple accepts for this purpose.
    public var allowedAlgorithms: [KeyAlgorithmChoice] {
        switch self {
        case .processing: [.ec, .rsa]
        case .identity: [.rsa]
        }
    }

    public var defaultAlgorithm: KeyAlgorithmChoice {
        switch self {
        case .processing: .ec
        case .identity: .rsa
        }
    }
}

/// The `--type` an admin chooses.
public enum KeyAlgorithmChoice: String, Sendable, Hashable, Codable, CaseIterable {
    case ec
    case rsa
}
