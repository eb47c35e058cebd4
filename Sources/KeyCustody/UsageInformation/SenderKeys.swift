import ApplePay
import Crypto
import PKCS11

/// Makes and opens usage-information sender keys in the custody the HSM allows.
public struct SenderKeys: Sendable {
    let hsm: HSM

    public init(hsm: HSM) {
        self.hsm = hsm
    }

    /// A new P-384 sender key labelled `label`: in the HSM when the probe allows, else a seed
    /// wrapped by a new HSM key-encrypting key. `forceWrapped` takes the fallback regardless.
    public func create(label: String, forceWrapped: Bool = false) async throws -> SenderKeyReference {
        guard let custody = SenderKeyCustody.forNewKeys(hsm.capabilities, forceWrapped: forceWrapped) else {
            throw PKCS11Error.mechanismUnsupported("the token can neither do P-384 ECDH nor wrap a data key")
        }
        switch custody {
        case .inHSM:
            let (id, point) = try await hsm.generateP384KeyAgreementKey(label: label)
            return SenderKeyReference(custody: .inHSM, hsmKeyID: id, publicKey: point, wrappedSeed: nil)
        case .wrappedByHSMKey:
            return try await createWrapped(label: label)
        }
    }

    /// A seed wrapped by a new HSM key-encrypting key, which is destroyed again if the seed cannot
    /// be wrapped. (A separate function, without `try?` in its `catch`: the Swift 6.2 release
    /// build's coroutine splitting crashed on that shape.)
    private func createWrapped(label: String) async throws -> SenderKeyReference {
        guard let kind = hsm.dataKeyEncryptingKeyKind else { throw PKCS11Error.mechanismUnsupported("no data-key wrapping") }
        let kek = try await hsm.generateSecretKey(SecretKeySpecification(label: label, kind: kind))
        let seed = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let wrapped: WrappedDataKey
        let publicKey: [UInt8]
        do {
            wrapped = try await hsm.wrapDataKey(kek.id, dataKey: seed)
            publicKey = try Self.privateKey(seed: seed).serializedPublicKey
        } catch {
            await discard(kek.id)
            throw error
        }
        return SenderKeyReference(custody: .wrappedByHSMKey, hsmKeyID: kek.id, publicKey: publicKey, wrappedSeed: wrapped)
    }

    /// Destroys an unused key-encrypting key; one that cannot be destroyed now is an unused key left behind, nothing worse.
    private func discard(_ id: KeyIdentifier) async {
        do {
            try await hsm.destroySecretKey(id)
        } catch {
            return
        }
    }

    /// The sender key `reference` names, ready to seal. A wrapped key is unwrapped for this use
    /// only and checked against its recorded public key.
    public func open(_ reference: SenderKeyReference) async throws -> any HPKESenderKey {
        switch reference.custody {
        case .inHSM:
            return HSMP384SenderKey(hsm: hsm, id: reference.hsmKeyID, publicKey: reference.publicKey)
        case .wrappedByHSMKey:
            guard let wrapped = reference.wrappedSeed else { throw PKCS11Error.invalidInput("the wrapped sender key has no seed") }
            let key = try Self.privateKey(seed: try await hsm.unwrapDataKey(reference.hsmKeyID, wrapped: wrapped))
            guard key.serializedPublicKey == reference.publicKey else {
                throw PKCS11Error.invalidInput("the unwrapped sender key does not match its recorded public key")
            }
            return key
        }
    }

    /// Destroys the HSM key `reference` depends on; the sender key is then gone for good.
    public func destroy(_ reference: SenderKeyReference) async throws {
        switch reference.custody {
        case .inHSM: try await hsm.destroyP384KeyAgreementKey(reference.hsmKeyID)
        case .wrappedByHSMKey: try await hsm.destroySecretKey(reference.hsmKeyID)
        }
    }

    /// The P-384 key of a seed: HPKE's own `DeriveKeyPair` (RFC 9180 §7.1.3).
    static func privateKey(seed: [UInt8]) throws -> SoftwareP384SenderKey {
        let scalar = try HPKESuite.p384SHA384AES256GCM.derivePrivateKey(from: seed) {
            (try? P384.KeyAgreement.PrivateKey(rawRepresentation: $0)) != nil
        }
        return SoftwareP384SenderKey(try P384.KeyAgreement.PrivateKey(rawRepresentation: scalar))
    }
}
