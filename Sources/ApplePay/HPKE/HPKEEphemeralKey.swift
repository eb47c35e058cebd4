import Crypto
import Foundation

/// The sender's ephemeral key: made for one encapsulation, in software. A parameter so that
/// the published test vectors, which fix it, can be reproduced.
public protocol HPKEEphemeralKey: Sendable {
    /// The public key, serialized as the suite's KEM does (the `enc` of RFC 9180).
    var serializedPublicKey: [UInt8] { get }
    /// The Diffie-Hellman shared secret (the x-coordinate) with `peerPublicKey`.
    func sharedSecret(with peerPublicKey: [UInt8]) throws -> [UInt8]
}

extension P384.KeyAgreement.PrivateKey: HPKEEphemeralKey {
    public var serializedPublicKey: [UInt8] { Array(self.publicKey.x963Representation) }

    public func sharedSecret(with peerPublicKey: [UInt8]) throws -> [UInt8] {
        let peer: P384.KeyAgreement.PublicKey
        do { peer = try P384.KeyAgreement.PublicKey(x963Representation: peerPublicKey) } catch {
            throw HPKEError.invalidRecipientKey
        }
        return try sharedSecretFromKeyAgreement(with: peer).withUnsafeBytes { Array($0) }
    }
}
