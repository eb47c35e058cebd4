import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import Testing

extension HSMTests {
    @Suite struct SessionKeyCopies {
        /// Derives once with `key` and returns what the HSM holds of it outside the token.
        private func deriveAndFindCopies(_ hsm: HSM, _ key: KeyObject) async throws -> [[AttributeType: [UInt8]]] {
            guard case .ecP256(let point) = key.publicKey else { throw PKCS11Error.invalidInput("not EC") }
            let ephemeral = P256.KeyAgreement.PrivateKey()
            let derived = try await hsm.deriveConcatenationKDFKey(
                key.id, peerPoint: Array(ephemeral.publicKey.x963Representation), otherInfo: [7])
            let expected = softwareConcatenationKDF(
                try ephemeral.sharedSecretFromKeyAgreement(with: try P256.KeyAgreement.PublicKey(x963Representation: point)), [7])
            #expect(derived == expected)
            return try await hsm.withSession { session throws(PKCS11Error) in
                try session.findObjects([.objectClass(.privateKey), .bool(.token, false)]).map { handle throws(PKCS11Error) in
                    try session.attributes(of: handle, [.id, .sensitive, .extractable, .private, .value])
                }
            }
        }

        @Test func softHSMDecryptsWithSensitiveSessionCopiesThatEndWithTheKey() async throws {
            let hsm = try await SoftHSMTestToken.make().open()
            #expect(hsm.usesSessionKeyCopies, "auto turns copies on for SoftHSM")
            let key = try await hsm.generateKeyPair(KeySpecification(label: "copied", algorithm: .ecP256, usage: [.derive]))
            let copies = try await deriveAndFindCopies(hsm, key)
            #expect(copies.count == 1, "one worker derived, so one copy")
            for copy in copies {
                #expect(copy[.id] == key.id.bytes)
                #expect(copy[.sensitive] == [1])
                #expect(copy[.extractable] == [0])
                #expect(copy[.private] == [1])
                #expect(copy[.value] == nil, "a sensitive key's value is never readable")
            }
            // The key listing sees the token key once, not its copies.
            #expect(try await hsm.keys().map(\.id) == [key.id])

            let recycles = hsm.recycles
            #expect(try await hsm.destroyKeyPair(key.id) == 2)
            #expect(hsm.recycles == recycles + 1, "destroying a key ends its session copies")
            let left = try await hsm.withSession { session throws(PKCS11Error) in
                try session.findObjects([.objectClass(.privateKey)]).count
            }
            #expect(left == 0)
            let error = await #expect(throws: PKCS11Error.self) {
                try await hsm.deriveConcatenationKDFKey(
                    key.id, peerPoint: Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation), otherInfo: [])
            }
            #expect(error?.code == .keyNotFound)
            await hsm.close()
        }

        @Test func aKeyDestroyedElsewhereLosesItsCopiesAtTheNextListing() async throws {
            let token = try await SoftHSMTestToken.make()
            let hsm = try await token.open()
            let key = try await hsm.generateKeyPair(KeySpecification(label: "elsewhere", algorithm: .ecP256, usage: [.derive]))
            #expect(try await deriveAndFindCopies(hsm, key).count == 1)
            // An administrator's HSM destroys the key, then goes away.
            let admin = try await token.open { $0.sessionKeyCopies = .off }
            #expect(try await admin.destroyKeyPair(key.id) == 2)
            await admin.close()

            let recycles = hsm.recycles
            #expect(try await hsm.keys().isEmpty)
            #expect(hsm.recycles == recycles + 1, "a key gone from the listing ends the session copies")
            let copies = try await hsm.withSession { session throws(PKCS11Error) in
                try session.findObjects([.objectClass(.privateKey)]).count
            }
            #expect(copies == 0)
            await hsm.close()
        }

        @Test func offUsesTheTokenObjectsOnly() async throws {
            let token = try await SoftHSMTestToken.make()
            let hsm = try await token.open { $0.sessionKeyCopies = .off }
            #expect(!hsm.usesSessionKeyCopies)
            let key = try await hsm.generateKeyPair(KeySpecification(label: "uncopied", algorithm: .ecP256, usage: [.derive]))
            #expect(try await deriveAndFindCopies(hsm, key).isEmpty)
            await hsm.close()
        }
    }
}
