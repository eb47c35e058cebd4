import Crypto

/// An EC_v1 token's ephemeral public key: a point checked to be on P-256, with its uncompressed
/// encoding (`04 ‖ X ‖ Y`), which is what PKCS#11's ECDH takes.
///
/// The encoding is the one in the DER when the DER holds it (Apple's always do): re-encoding a
/// parsed key converts the point to affine coordinates, a field inversion per token.
public struct EphemeralPublicKey: Sendable {
    public let key: P256.KeyAgreement.PublicKey
    public let x963Representation: [UInt8]

    /// A DER SubjectPublicKeyInfo (id-ecPublicKey, prime256v1); throws unless the point is on the curve.
    public init(derRepresentation der: [UInt8]) throws {
        key = try P256.KeyAgreement.PublicKey(derRepresentation: der)
        // An uncompressed P-256 point is the DER's last 65 bytes, after a BIT STRING header with
        // no unused bits: 03 42 00. swift-crypto has just decoded that point from these bytes.
        let point = der.suffix(65)
        let header = der.dropLast(65).suffix(3)
        if point.first == 0x04, header.elementsEqual([0x03, 0x42, 0x00]) {
            x963Representation = Array(point)
        } else {
            x963Representation = Array(key.x963Representation)
        }
    }
}
