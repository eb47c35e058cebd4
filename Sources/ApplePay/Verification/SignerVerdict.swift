import Crypto
import Foundation
import _CryptoExtras

/// What a verified signing chain allows: the leaf's key, and the period in which every
/// certificate of the chain was valid. It depends on the certificates only, so it is cached.
struct SignerVerdict: Sendable {
    enum SigningKey: Sendable {
        case p256(P256.Signing.PublicKey)
        case rsa(_RSA.Signing.PublicKey)
    }

    let signingKey: SigningKey
    let validFrom: Date
    let validUntil: Date
    /// Subjects, leaf first, for inspection.
    let chain: [String]
}
