import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import Testing
import _CryptoExtras

extension HSMTests {
    /// The secret-key capabilities the vault builds on, on a real SoftHSM token: each probed path
    /// in use, round trips, refusals, and the keys' protection read back from the token.
    @Suite struct SecretKeys {
        @Test func theProbeFindsEveryPathAndReportsIt() async throws {
            let hsm = try await TestToken.make().open()
            let capabilities = hsm.capabilities
            #expect(capabilities.aesGCM)
            #expect(capabilities.hmacSHA256)
            #expect(capabilities.dataKeyWrapPath != nil)
            #expect(capabilities.report.contains { $0.hasPrefix("AES-GCM: in use") }, "\(capabilities.report)")
            #expect(capabilities.report.contains { $0.hasPrefix("HMAC-SHA256: in use") }, "\(capabilities.report)")
            #expect(capabilities.rsaPSS)
            #expect(capabilities.report.contains { $0.hasPrefix("RSA-PSS: in use") }, "\(capabilities.report)")
            #expect(capabilities.report.contains { $0.hasPrefix("data keys: ") && $0.hasSuffix("in use") }, "\(capabilities.report)")
            await hsm.close()
        }

        @Test func generatedSecretKeysAreSensitiveNonExtractableTokenObjects() async throws {
            let token = try await TestToken.make()
            let hsm = try await token.open()
            let kek = try await hsm.generateSecretKey(SecretKeySpecification(label: "kek registrations v1", kind: .aes256KeyWrap))
            let mac = try await hsm.generateSecretKey(SecretKeySpecification(label: "fingerprint v1", kind: .hmacSHA256))
            // One key per CKA_ID: a second is refused and nothing is created.
            let duplicate = await #expect(throws: PKCS11Error.self) {
                try await hsm.generateSecretKey(SecretKeySpecification(id: kek.id, label: "again", kind: .aes256Encryption))
            }
            #expect(duplicate?.category == .badInput)
            await hsm.close()

            // Another opening of the token finds both by CKA_ID, with their protection intact.
            let reopened = try await token.open()
            let keys = try await reopened.secretKeys()
            #expect(Set(keys.map(\.id)) == [kek.id, mac.id])
            for key in keys {
                #expect(key.isSensitive)
                #expect(!key.isExtractable)
                #expect(key.neverLeftTheHSM)
            }
            #expect(keys.first { $0.id == kek.id }?.kind == .aes256KeyWrap)
            #expect(keys.first { $0.id == mac.id }?.label == "fingerprint v1")
            let raw = try await reopened.withSession { session throws(PKCS11Error) in
                guard let handle = try session.findObjects([.objectClass(.secretKey), .id(kek.id)]).first else {
                    throw PKCS11Error.invalidInput("the key is not in the token")
                }
                let attributes = try session.attributes(
                    of: handle, [.value, .sensitive, .extractable, .token, .private, .modifiable, .copyable, .wrap, .decrypt, .encrypt])
                // Its usages cannot be widened: a wrapping key that could also decrypt would give away what it wraps.
                #expect(throws: PKCS11Error.self) { try session.setAttributes(of: handle, [.bool(.decrypt, true)]) }
                return attributes
            }
            #expect(raw[.value] == nil, "the key's value must not be readable")
            #expect(raw[.modifiable] == [0])
            // NSS softokn does not know CKA_COPYABLE: the probe asked, and the template left it out.
            #expect(hsm.capabilities.unknownAttributes == (token.backend == .nss ? [.copyable] : []))
            #expect(raw[.copyable] == (token.backend == .nss ? nil : [0]))
            #expect(raw[.wrap] == [1])
            #expect(raw[.decrypt] == [0])
            #expect(raw[.encrypt] == [0])
            #expect(raw[.sensitive] == [1])
            #expect(raw[.extractable] == [0])
            #expect(raw[.token] == [1])
            #expect(raw[.private] == [1])
            await reopened.close()
        }

        @Test func aesGCMRoundTripsAndRefusesTheWrongAdditionalDataKeyOrByte() async throws {
            let hsm = try await TestToken.make().open()
            let kek = try await hsm.generateSecretKey(SecretKeySpecification(label: "gcm", kind: .aes256Encryption))
            let other = try await hsm.generateSecretKey(SecretKeySpecification(label: "gcm-other", kind: .aes256Encryption))
            let plaintext = Array("a data key, or any secret".utf8)
            let aad = Array("registration 42 | registrations | acme".utf8)
            let sealed = try await hsm.sealAESGCM(kek.id, plaintext: plaintext, additionalData: aad)
            #expect(sealed.count == 12 + plaintext.count + 16)
            #expect(try await hsm.sealAESGCM(kek.id, plaintext: plaintext, additionalData: aad) != sealed, "a fresh IV each time")
            #expect(try await hsm.openAESGCM(kek.id, sealed: sealed, additionalData: aad) == plaintext)

            var tampered = sealed
            tampered[20] ^= 1
            let wrongData = await #expect(throws: PKCS11Error.self, "other additional data") {
                try await hsm.openAESGCM(kek.id, sealed: sealed, additionalData: Array("registration 43".utf8))
            }
            let wrongKey = await #expect(throws: PKCS11Error.self, "another key") {
                try await hsm.openAESGCM(other.id, sealed: sealed, additionalData: aad)
            }
            let changedByte = await #expect(throws: PKCS11Error.self, "a changed byte") {
                try await hsm.openAESGCM(kek.id, sealed: tampered, additionalData: aad)
            }
            for error in [wrongData, wrongKey, changedByte] { #expect(error?.category == .badInput, "\(String(describing: error))") }
            // The HSM's AES-GCM is the standard one: with a known-answer key imported for this test
            // only, swift-crypto opens what the HSM sealed, and the HSM opens what swift-crypto sealed.
            let value = (0..<32).map { UInt8(0x40 + $0) }
            let known = try await hsm.importSecretKey(value, as: SecretKeySpecification(label: "gcm-kat", kind: .aes256Encryption))
            let fromHSM = try await hsm.sealAESGCM(known.id, plaintext: plaintext, additionalData: aad)
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: fromHSM.prefix(12)), ciphertext: fromHSM.dropFirst(12).dropLast(16), tag: fromHSM.suffix(16))
            #expect(try Array(AES.GCM.open(box, using: SymmetricKey(data: value), authenticating: aad)) == plaintext)
            let fromSoftware = try AES.GCM.seal(plaintext, using: SymmetricKey(data: value), authenticating: aad)
            let combined = Array(fromSoftware.nonce) + Array(fromSoftware.ciphertext) + Array(fromSoftware.tag)
            #expect(try await hsm.openAESGCM(known.id, sealed: combined, additionalData: aad) == plaintext)
            await hsm.close()
        }

        @Test func dataKeysWrapAndUnwrapOnThePathOfTheirKeysKind() async throws {
            let token = try await TestToken.make()
            let hsm = try await token.open()
            // SoftHSM wraps per RFC 5649. NSS softokn's CKM_AES_KEY_WRAP_PAD is RFC 3394 with PKCS#7
            // padding, a different answer: the probe refuses it, and data keys go by AES-GCM.
            let usable: [SecretKeyKind] = token.backend == .softHSM ? [.aes256KeyWrap, .aes256Encryption] : [.aes256Encryption]
            #expect(hsm.dataKeyEncryptingKeyKind == usable[0], "\(hsm.capabilities.report)")
            if token.backend == .nss {
                #expect(
                    hsm.capabilities.report.contains(
                        "data keys: aes-key-wrap-pad: unsupported (the token's wrapping differs from RFC 5649)"))
            }
            let dataKey = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
            // Both kinds work on SoftHSM; a record keeps the path, and each key opens only its own.
            for kind in usable {
                let kek = try await hsm.generateSecretKey(SecretKeySpecification(label: "kek", kind: kind))
                let sibling = try await hsm.generateSecretKey(SecretKeySpecification(label: "kek-2", kind: kind))
                let wrapped = try await hsm.wrapDataKey(kek.id, dataKey: dataKey)
                #expect(wrapped.path.keyEncryptingKeyKind == kind)
                #expect(wrapped.bytes.count < 64)
                #expect(try await hsm.unwrapDataKey(kek.id, wrapped: wrapped) == dataKey)
                var damaged = wrapped.bytes
                damaged[damaged.count - 1] ^= 1
                for (id, bytes) in [(kek.id, damaged), (sibling.id, wrapped.bytes)] {
                    let refused = await #expect(throws: PKCS11Error.self, "\(kind): a damaged blob, or another key") {
                        try await hsm.unwrapDataKey(id, wrapped: WrappedDataKey(path: wrapped.path, bytes: bytes))
                    }
                    #expect(refused?.category == .badInput, "\(String(describing: refused))")
                }
                // A blob claiming the other path is refused before the token sees it.
                let otherPath = DataKeyWrapPath.allCases.first { $0 != wrapped.path } ?? wrapped.path
                await #expect(throws: PKCS11Error.self) {
                    try await hsm.unwrapDataKey(kek.id, wrapped: WrappedDataKey(path: otherPath, bytes: wrapped.bytes))
                }
            }
            // Data keys are AES keys.
            let kek = try await hsm.generateSecretKey(SecretKeySpecification(label: "kek-3", kind: usable[0]))
            await #expect(throws: PKCS11Error.self) { try await hsm.wrapDataKey(kek.id, dataKey: [UInt8](repeating: 7, count: 20)) }
            await hsm.close()
        }

        /// A known-answer test: the key's value is imported for this test only, so swift-crypto's
        /// HMAC over the same data can be compared with the HSM's.
        @Test func hmacEqualsSwiftCryptosWithAKnownAnswerKey() async throws {
            let hsm = try await TestToken.make().open()
            let value = (0..<32).map { UInt8(255 - $0) }
            let key = try await hsm.importSecretKey(value, as: SecretKeySpecification(label: "kat", kind: .hmacSHA256))
            #expect(key.isSensitive)
            #expect(!key.isExtractable)
            for message in [[], Array("4111111111111111".utf8), [UInt8](repeating: 0x5A, count: 1000)] as [[UInt8]] {
                let expected = Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: value)))
                #expect(try await hsm.hmacSHA256(key.id, data: message) == expected)
            }
            // A generated key is stable: the same input gives the same MAC.
            let generated = try await hsm.generateSecretKey(SecretKeySpecification(label: "fingerprint", kind: .hmacSHA256))
            let first = try await hsm.hmacSHA256(generated.id, data: Array("5454545454545454".utf8))
            #expect(try await hsm.hmacSHA256(generated.id, data: Array("5454545454545454".utf8)) == first)
            // Keys keep to their kind.
            await #expect(throws: PKCS11Error.self) { try await hsm.sealAESGCM(generated.id, plaintext: [1], additionalData: []) }
            await #expect(throws: PKCS11Error.self) {
                try await hsm.importSecretKey([1, 2, 3], as: SecretKeySpecification(label: "short", kind: .hmacSHA256))
            }
            await hsm.close()
        }

        @Test func rsaPSSSignatureVerifiesWithSwiftCrypto() async throws {
            let hsm = try await TestToken.make().open()
            try #require(hsm.capabilities.rsaPSS, "SoftHSM 2.6.1 offers CKM_SHA256_RSA_PKCS_PSS: \(hsm.capabilities.report)")
            let key = try await hsm.generateKeyPair(KeySpecification(label: "identity", algorithm: .rsa2048, usage: [.sign]))
            guard case .rsa(let modulus, let exponent) = key.publicKey else {
                Issue.record("not RSA")
                return
            }
            let publicKey = try _RSA.Signing.PublicKey(n: modulus, e: exponent)
            let message = Array("TLS 1.3, client CertificateVerify".utf8)
            let signature = try await hsm.signRSAPSSSHA256(key.id, message: message)
            #expect(signature.count == 256)
            #expect(publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: message, padding: .PSS))
            #expect(!publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: message + [0], padding: .PSS))
            #expect(
                !publicKey.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: signature), for: message, padding: .insecurePKCS1v1_5))
            await hsm.close()
        }
    }
}
