import ApplePay
import Crypto
import Foundation
import PaywardenPrimitives
import PaywardenSandbox
import Synchronization
import _CryptoExtras

/// Merchant keys held in process memory by swift-crypto: real ECDH with the one-step KDF, real
/// RSA-OAEP (SHA-256). The Apple Pay protocol tests run on them without an HSM; the same tests run
/// on SoftHSM keys too, so the two implementations of ``MerchantKeyOperations`` are held to one
/// behaviour. Tests only: a production merchant key never exists outside the HSM.
public final class SoftwareMerchantKeys: MerchantKeyDirectory, MerchantKeyOperations {
    private enum PrivateKey: Sendable {
        case ec(P256.KeyAgreement.PrivateKey)
        /// PKCS#8 DER: swift-crypto's RSA encryption keys are not `Sendable`.
        case rsa(der: Data)
    }

    private struct Entry: Sendable {
        let reference: MerchantKeyReference
        let privateKey: PrivateKey
    }

    /// Keyed by the SHA-256 of the public key's SubjectPublicKeyInfo, as Apple's publicKeyHash is.
    private let entries = Mutex<[[UInt8]: Entry]>([:])

    public init() {}

    /// A fresh key for `merchantID`, of the kind `version` decrypts.
    public func generate(merchantID: String, version: PaymentTokenVersion) throws -> TokenRecipient {
        switch version {
        case .ecV1:
            add(
                .ec(P256.KeyAgreement.PrivateKey()), merchantID: merchantID,
                merchantIdentifierHash: TokenForge.merchantIdentifierHash(merchantID))
        case .rsaV1:
            add(
                .rsa(der: try _RSA.Encryption.PrivateKey(keySize: .bits2048).derRepresentation), merchantID: merchantID,
                merchantIdentifierHash: TokenForge.merchantIdentifierHash(merchantID)
            )
        }
    }

    /// A key read from PEM (PKCS#8, SEC1 or PKCS#1), as the conformance vectors ship them, for the
    /// merchant whose identifier hashes to `merchantIdentifierHash` (a certificate carries only the hash).
    public func add(pem text: String, merchantIdentifierHash: [UInt8]) throws -> TokenRecipient {
        // OpenSSL writes an `EC PARAMETERS` block before the key; swift-crypto reads one block.
        let pem = text.range(of: "-----BEGIN EC PRIVATE KEY-----").map { String(text[$0.lowerBound...]) } ?? text
        if let ec = try? P256.KeyAgreement.PrivateKey(pemRepresentation: pem) {
            return add(.ec(ec), merchantID: "", merchantIdentifierHash: merchantIdentifierHash)
        }
        let rsa = try _RSA.Encryption.PrivateKey(pemRepresentation: pem)
        return add(.rsa(der: rsa.derRepresentation), merchantID: "", merchantIdentifierHash: merchantIdentifierHash)
    }

    /// Forgets the key: tokens to it become `unknown_public_key_hash`.
    public func remove(_ recipient: TokenRecipient) {
        _ = entries.withLock { $0.removeValue(forKey: recipient.publicKeyHashBytes) }
    }

    private func add(_ privateKey: PrivateKey, merchantID: String, merchantIdentifierHash: [UInt8]) -> TokenRecipient {
        let recipient: TokenRecipient
        let version: PaymentTokenVersion
        switch privateKey {
        case .ec(let key):
            recipient = TokenRecipient(merchantID: merchantID, publicKey: .ec(key.publicKey))
            version = .ecV1
        case .rsa(let der):
            // Parsing our own serialisation cannot fail; an empty SPKI would select no key.
            let spki = (try? _RSA.Encryption.PrivateKey(derRepresentation: der))?.publicKey.derRepresentation ?? Data()
            recipient = TokenRecipient(merchantID: merchantID, publicKey: .rsa(spki: spki))
            version = .rsaV1
        }
        let reference = MerchantKeyReference(keyID: recipient.keyID, version: version, merchantIdentifierHash: merchantIdentifierHash)
        entries.withLock { $0[recipient.publicKeyHashBytes] = Entry(reference: reference, privateKey: privateKey) }
        return recipient
    }

    public func key(forPublicKeyHash hash: [UInt8]) -> MerchantKeyReference? {
        entries.withLock { $0[hash]?.reference }
    }

    public func deriveKey(ephemeralPublicKey: EphemeralPublicKey, otherInfo: [UInt8], key: MerchantKeyReference) async throws
        -> SymmetricKey
    {
        guard case .ec(let privateKey) = try privateKey(for: key) else {
            throw PaymentTokenError(.decryptionFailed, "the key is not an EC key")
        }
        return OneStepKDF.sha256(
            sharedSecret: try privateKey.sharedSecretFromKeyAgreement(with: ephemeralPublicKey.key), otherInfo: otherInfo)
    }

    public func unwrapKey(_ wrappedKey: [UInt8], key: MerchantKeyReference) async throws -> SymmetricKey {
        guard case .rsa(let der) = try privateKey(for: key) else {
            throw PaymentTokenError(.decryptionFailed, "the key is not an RSA key")
        }
        do {
            let privateKey = try _RSA.Encryption.PrivateKey(derRepresentation: der)
            return SymmetricKey(data: try privateKey.decrypt(wrappedKey, padding: .PKCS1_OAEP_SHA256))
        } catch {
            throw PaymentTokenError(.decryptionFailed, "RSA-OAEP refused the wrapped key")
        }
    }

    /// A software key's id is the hex of its publicKeyHash (``TokenRecipient/keyID``): the map's key.
    private func privateKey(for reference: MerchantKeyReference) throws(PaymentTokenError) -> PrivateKey {
        let found = Hex.decode(reference.keyID).flatMap { hash in entries.withLock { $0[hash]?.privateKey } }
        guard let found else {
            throw PaymentTokenError(.unknownPublicKeyHash, "the key for this publicKeyHash is gone")
        }
        return found
    }
}
