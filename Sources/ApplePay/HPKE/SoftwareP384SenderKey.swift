import Crypto

/// A P-384 sender key in memory: the usage-information sender key where the HSM cannot do P-384
/// ECDH (unwrapped from its HSM-wrapped copy for one use), and tests.
public struct SoftwareP384SenderKey: HPKESenderKey {
    private let privateKey: P384.KeyAgreement.PrivateKey

    public init(_ privateKey: P384.KeyAgreement.PrivateKey) {
        self.privateKey = privateKey
    }

    public var serializedPublicKey: [UInt8] { Array(privateKey.publicKey.x963Representation) }

    public func hashOfSharedSecret(with peerPublicKey: [UInt8], prefix: [UInt8], suite: HPKESuite) async throws -> [UInt8] {
        guard suite.kemID == HPKESuite.p384SHA384AES256GCM.kemID else { throw HPKEError.keyNotOfSuite }
        let secret = try privateKey.sharedSecret(with: peerPublicKey)
        return suite.digest(prefix + secret)
    }
}
