import ApplePay
import PKCS11

/// An HPKE sender key whose private half is a P-384 key in the HSM: the KEM's hash over the
/// shared secret is finished by the HSM (see ``HPKESenderKey``).
public struct HSMP384SenderKey: HPKESenderKey {
    let hsm: HSM
    let id: KeyIdentifier
    public let serializedPublicKey: [UInt8]

    public init(hsm: HSM, id: KeyIdentifier, publicKey: [UInt8]) {
        self.hsm = hsm
        self.id = id
        self.serializedPublicKey = publicKey
    }

    public func hashOfSharedSecret(with peerPublicKey: [UInt8], prefix: [UInt8], suite: HPKESuite) async throws -> [UInt8] {
        guard suite == .p384SHA384AES256GCM else { throw HPKEError.keyNotOfSuite }
        return try await hsm.sha384OfP384SharedSecret(id, peerPoint: peerPublicKey, prefix: prefix)
    }
}
