/// The sender's static key in HPKE's auth mode (RFC 9180 §4.1, `AuthEncap`), reduced to the one
/// thing the key schedule needs from it.
///
/// The KEM's first step over DH(skS, pkR) is `LabeledExtract`, an HMAC with an empty key, whose
/// inner hash is `H(ipad ‖ "HPKE-v1" ‖ suite_id ‖ "eae_prk" ‖ DH(skE, pkR) ‖ DH(skS, pkR))`. The
/// sender's shared secret is its last input, so a key held in an HSM can finish that hash there
/// (`C_DigestKey`) and give out only the digest: the shared secret never leaves the HSM.
public protocol HPKESenderKey: Sendable {
    /// The public key, serialized as the suite's KEM does (an uncompressed X9.63 point).
    var serializedPublicKey: [UInt8] { get }

    /// `H(prefix ‖ Z)`, where `Z` is the Diffie-Hellman shared secret (the x-coordinate) of this
    /// key and `peerPublicKey`, and `H` is the hash of `suite`'s KDF.
    func hashOfSharedSecret(with peerPublicKey: [UInt8], prefix: [UInt8], suite: HPKESuite) async throws -> [UInt8]
}
