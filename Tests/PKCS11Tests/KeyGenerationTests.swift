import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import Testing
import _CryptoExtras

extension HSMTests {
    @Suite struct KeyGeneration {
        @Test func generatedKeysAreSensitiveNeverExtractableAndFoundAgain() async throws {
            let token = try await TestToken.make()
            let hsm = try await token.open()
            let ec = try await hsm.generateKeyPair(KeySpecification(label: "ec-key", algorithm: .ecP256, usage: [.derive, .sign]))
            let rsa = try await hsm.generateKeyPair(
                KeySpecification(label: "rsa-key", algorithm: .rsa2048, usage: [.decrypt, .unwrap, .sign]))
            await hsm.close()

            // A fresh HSM finds them by CKA_ID, with the attributes read back from the token.
            let reopened = try await token.open()
            let keys = try await reopened.keys()
            #expect(Set(keys.map(\.id)) == [ec.id, rsa.id])
            for key in keys {
                #expect(key.isSensitive)
                #expect(!key.isExtractable)
            }
            #expect(try await reopened.key(ec.id).usage == [.derive, .sign])
            #expect(try await reopened.key(rsa.id).usage == [.decrypt, .unwrap, .sign])
            #expect(try await reopened.key(ec.id).publicKey == ec.publicKey)

            // The private values cannot be read, and the protective attributes hold at the source.
            let raw = try await reopened.withSession { session throws(PKCS11Error) in
                let handle = try session.findObjects([.objectClass(.privateKey), .id(ec.id)]).first!
                return try session.attributes(of: handle, [.value, .sensitive, .extractable, .alwaysSensitive, .neverExtractable, .token])
            }
            #expect(raw[.value] == nil)
            #expect(raw[.sensitive] == [1])
            #expect(raw[.extractable] == [0])
            #expect(raw[.alwaysSensitive] == [1])
            #expect(raw[.neverExtractable] == [1])
            #expect(raw[.token] == [1])
            await reopened.close()
        }

        @Test func ecdsaSignatureVerifiesWithSwiftCrypto() async throws {
            let hsm = try await TestToken.make().open()
            let key = try await hsm.generateKeyPair(KeySpecification(label: "signer", algorithm: .ecP256, usage: [.sign]))
            let message = Data("certificate request info".utf8)
            let der = try await hsm.signECDSA(key.id, digest: Array(SHA256.hash(data: message)))
            guard case .ecP256(let point) = key.publicKey else {
                Issue.record("not EC")
                return
            }
            let publicKey = try P256.Signing.PublicKey(x963Representation: point)
            #expect(publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: der), for: message))
            #expect(!publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: der), for: Data("other".utf8)))
            await hsm.close()
        }

        @Test func rsaSignatureVerifiesWithSwiftCrypto() async throws {
            let hsm = try await TestToken.make().open()
            let key = try await hsm.generateKeyPair(KeySpecification(label: "rsa-signer", algorithm: .rsa2048, usage: [.sign]))
            let message = Array("identity certificate request".utf8)
            let signature = try await hsm.signRSAPKCS1SHA256(key.id, message: message)
            guard case .rsa(let n, let e) = key.publicKey else {
                Issue.record("not RSA")
                return
            }
            #expect(n.count == 256)
            let publicKey = try _RSA.Signing.PublicKey(n: n, e: e)
            #expect(
                publicKey.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: signature), for: message, padding: .insecurePKCS1v1_5))
            await hsm.close()
        }

        /// NSS softokn replaces an object when another of the same class and CKA_ID is made, where
        /// SoftHSM keeps both: a new or imported key never takes an id in use, on either.
        @Test func aKeyIDInUseIsNeverTakenAgain() async throws {
            let hsm = try await TestToken.make().open()
            let first = try await hsm.generateKeyPair(KeySpecification(label: "first", algorithm: .ecP256, usage: [.derive]))
            let taken = KeySpecification(id: first.id, label: "second", algorithm: .ecP256, usage: [.derive])
            let refused = await #expect(throws: PKCS11Error.self) { try await hsm.generateKeyPair(taken) }
            #expect(refused?.category == .badInput)
            let software = try SoftwarePrivateKey(pemOrDER: Array(P256.KeyAgreement.PrivateKey().pemRepresentation.utf8))
            await #expect(throws: PKCS11Error.self) {
                try await hsm.withSession(retryingAfterLostLogin: false) { session throws(PKCS11Error) in
                    _ = try session.importPrivateKey(software, as: taken)
                }
            }
            let keys = try await hsm.keys()
            #expect(keys.map(\.id) == [first.id] && keys.first?.label == "first" && keys.first?.publicKey == first.publicKey)
            await hsm.close()
        }

        @Test func destroyedKeysAreGone() async throws {
            let hsm = try await TestToken.make().open()
            let key = try await hsm.generateKeyPair(KeySpecification(label: "short-lived", algorithm: .ecP256, usage: [.derive]))
            #expect(try await hsm.destroyKeyPair(key.id) == 2)
            #expect(try await hsm.keys().isEmpty)
            await #expect(throws: PKCS11Error.self) { try await hsm.key(key.id) }
            await hsm.close()
        }
    }
}
