import Crypto
import Foundation
import KeyCustody
import PaywardenPrimitives
import _CryptoExtras

/// Whom a forged token is encrypted to: a merchant identifier and a public key, wherever the
/// private half lives (the HSM or ``SoftwareMerchantKeys``).
public struct TokenRecipient: Sendable {
    public enum PublicKey: Sendable {
        case ec(P256.KeyAgreement.PublicKey)
        /// The SubjectPublicKeyInfo: swift-crypto's RSA encryption keys are not `Sendable`.
        case rsa(spki: Data)
    }

    public let merchantID: String
    public let publicKey: PublicKey
    /// Base64 of the SHA-256 of the SubjectPublicKeyInfo: the token header's publicKeyHash.
    public let publicKeyHash: String
    let publicKeyHashBytes: [UInt8]
    /// The key's id where it is kept: the HSM's `CKA_ID` in hex, or the publicKeyHash in hex for
    /// software keys.
    public let keyID: String

    public init(merchantID: String, publicKey: PublicKey) {
        let spki: Data
        switch publicKey {
        case .ec(let key): spki = key.derRepresentation
        case .rsa(let der): spki = der
        }
        let hash = Array(SHA256.hash(data: spki))
        self.merchantID = merchantID
        self.publicKey = publicKey
        self.publicKeyHash = Data(hash).base64EncodedString()
        self.publicKeyHashBytes = hash
        self.keyID = Hex.encode(hash)
    }

    /// A key in the HSM, as custody lists it.
    public init(_ key: MerchantKey) throws {
        switch key.key.publicKey {
        case .ecP256(let point):
            publicKey = .ec(try P256.KeyAgreement.PublicKey(x963Representation: point))
        case .rsa(let modulus, let exponent):
            publicKey = .rsa(spki: try _RSA.Encryption.PublicKey(n: modulus, e: exponent).derRepresentation)
        }
        merchantID = key.merchantID ?? ""
        publicKeyHash = key.publicKeyHash
        publicKeyHashBytes = Data(base64Encoded: key.publicKeyHash).map(Array.init) ?? []
        keyID = key.id.hex
    }
}
