import Crypto

/// P-384 key agreement keys for HPKE (usage information's sender key). They are found by id at
/// each use: they are not merchant payment keys and stay out of the key cache.
extension HSM {
    /// Generates a P-384 ECDH key pair in the token. Returns its id and uncompressed point.
    public func generateP384KeyAgreementKey(label: String) async throws(PKCS11Error) -> (id: KeyIdentifier, publicKey: [UInt8]) {
        try requireP384ECDH()
        let id = KeyIdentifier.random()
        let point = try await creatingTokenObjects(retryingAfterLostLogin: false) { session throws(PKCS11Error) in
            let (publicHandle, privateHandle) = try session.generateP384KeyAgreementKeyPair(id: id, label: label)
            do throws(PKCS11Error) {
                return try session.p384Point(of: publicHandle)
            } catch {
                try? session.destroyObject(privateHandle)
                try? session.destroyObject(publicHandle)
                throw error
            }
        }
        return (id, point)
    }

    /// The uncompressed point of the P-384 key `id`.
    public func p384PublicKey(_ id: KeyIdentifier) async throws(PKCS11Error) -> [UInt8] {
        try await withSession { session throws(PKCS11Error) in
            guard let handle = try session.tokenObjects(.publicKey, id: id).first else { throw .keyNotFound(id) }
            return try session.p384Point(of: handle)
        }
    }

    /// `SHA-384(prefix ‖ Z)`, Z being ECDH between the P-384 key `id` and `peerPoint`, on the
    /// path the probe chose. The point is validated here, so a bad point is bad input.
    public func sha384OfP384SharedSecret(_ id: KeyIdentifier, peerPoint: [UInt8], prefix: [UInt8]) async throws(PKCS11Error) -> [UInt8] {
        try requireP384ECDH()
        guard let path = capabilities.p384ECDHPath else { throw .mechanismUnsupported("no P-384 ECDH path") }
        guard peerPoint.count == 97, peerPoint.first == 0x04, (try? P384.KeyAgreement.PublicKey(x963Representation: peerPoint)) != nil
        else {
            throw .invalidInput("the peer public key is not an uncompressed point on P-384")
        }
        return try await withSession { session throws(PKCS11Error) in
            let handles = try session.tokenObjects(.privateKey, id: id)
            guard handles.count == 1, let handle = handles.first else { throw .keyNotFound(id) }
            return try session.sha384OfP384SharedSecret(path: path, privateKey: handle, peerPoint: peerPoint, prefix: prefix)
        }
    }

    /// Destroys the P-384 key pair `id`; returns how many objects went.
    @discardableResult
    public func destroyP384KeyAgreementKey(_ id: KeyIdentifier) async throws(PKCS11Error) -> Int {
        try await withSession { session throws(PKCS11Error) in try session.destroyTokenObjects([.privateKey, .publicKey], id: id) }
    }

    private func requireP384ECDH() throws(PKCS11Error) {
        guard capabilities.p384ECDHPath != nil else {
            throw .mechanismUnsupported(
                "the token offers no usable P-384 ECDH path: "
                    + capabilities.report.filter { $0.hasPrefix("P-384") }.joined(separator: "; "))
        }
    }
}
