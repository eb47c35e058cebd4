import Crypto

/// Whether the token can hold a P-384 key sensitive and never extractable and do ECDH with it,
/// hashing the secret as HPKE's KEM needs: checked against software on a throw-away key pair.
extension CapabilityProbe {
    static func probeP384ECDH(session: Session, configuration: HSMConfiguration, report: inout [String]) -> P384ECDHPath? {
        do {
            let (publicHandle, privateHandle) = try session.generateP384KeyAgreementKeyPair(
                id: .random(), label: "capability probe", token: false)
            defer {
                try? session.destroyObject(privateHandle)
                try? session.destroyObject(publicHandle)
            }
            let attributes = try session.attributes(of: privateHandle, [.sensitive, .extractable])
            guard attributes[.sensitive] == [1], attributes[.extractable] == [0] else {
                report.append("P-384 ECDH: unsupported (the token made the key extractable or not sensitive)")
                return nil
            }
            let point = try session.p384Point(of: publicHandle)
            let peer = P384.KeyAgreement.PrivateKey()
            let z = try peer.sharedSecretFromKeyAgreement(with: P384.KeyAgreement.PublicKey(x963Representation: point))
            let prefix = Array("capability probe: HPKE P-384".utf8)
            let expected = Array(SHA384.hash(data: prefix + z.withUnsafeBytes { Array($0) }))
            let extractableRefused = !configuration.allowExtractableSharedSecret
            return firstWorking(
                "P-384 ECDH", report: &report,
                refusal: { path in path == .extractableSecret && extractableRefused ? "extractable shared secrets are off" : nil }
            ) { (path: P384ECDHPath) in
                let hash = try session.sha384OfP384SharedSecret(
                    path: path, privateKey: privateHandle, peerPoint: Array(peer.publicKey.x963Representation), prefix: prefix)
                return hash == expected ? nil : "the token's result differs from software"
            }
        } catch {
            report.append("P-384 ECDH: probe failed: \(reason(error)); the usage-information sender key is wrapped by an HSM key")
        }
        return nil
    }
}
