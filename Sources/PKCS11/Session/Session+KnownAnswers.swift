import Crypto
import Foundation
import _CryptoExtras

extension Session {
    /// ECDH and the one-step KDF with `privateKey` on a peer point made here, compared with
    /// software's answer: whether the module runs this operation with this key correctly now.
    func ecdhKnownAnswer(path: ECDHPath, privateKey: ObjectHandle, publicKey: PublicKey) -> Bool {
        guard case .ecP256(let point) = publicKey, let merchant = try? P256.KeyAgreement.PublicKey(x963Representation: point) else {
            return false
        }
        let ephemeral = P256.KeyAgreement.PrivateKey()
        guard let z = try? ephemeral.sharedSecretFromKeyAgreement(with: merchant) else { return false }
        let otherInfo = Array("known-answer check".utf8)
        var hash = SHA256()
        hash.update(data: [0, 0, 0, 1])
        z.withUnsafeBytes { hash.update(bufferPointer: $0) }
        hash.update(data: otherInfo)
        let answer = try? deriveConcatenationKDFKey(
            path: path, privateKey: privateKey, peerPoint: Array(ephemeral.publicKey.x963Representation), otherInfo: otherInfo)
        return answer == Array(hash.finalize())
    }

    /// RSA-OAEP-SHA256 with `privateKey` on a ciphertext made here with its public key: whether
    /// the module runs this operation with this key correctly now.
    func rsaOAEPKnownAnswer(path: RSADecryptionPath, privateKey: ObjectHandle, publicKey: PublicKey) -> Bool {
        guard case .rsa(let modulus, let exponent) = publicKey, let key = try? _RSA.Encryption.PublicKey(n: modulus, e: exponent) else {
            return false
        }
        let secret = Array(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) })
        guard let ciphertext = try? key.encrypt(secret, padding: .PKCS1_OAEP_SHA256) else { return false }
        let answer = try? decryptOAEPSHA256(path: path, privateKey: privateKey, ciphertext: Array(ciphertext), modulusLength: modulus.count)
        return answer == secret
    }
}
