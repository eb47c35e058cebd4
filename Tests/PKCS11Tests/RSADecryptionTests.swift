import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import Testing
import _CryptoExtras

extension HSMTests {
    @Suite struct RSADecryption {
        /// SoftHSM has OAEP with SHA-1 only, so it falls back to raw RSA with OpenSSL's decoding
        /// (allowed in the test configuration); NSS softokn unwraps with OAEP-SHA256 in the HSM.
        @Test func oaepSHA256DecryptsOnTheStrongestPathTheTokenHas() async throws {
            let token = try await TestToken.make()
            let hsm = try await token.open()
            switch token.backend {
            case .softHSM:
                #expect(hsm.capabilities.rsaDecryptionPath == .rawWithSoftwareOAEP)
                #expect(hsm.capabilities.report.contains { $0.hasPrefix("RSA: rsa-oaep-sha256-decrypt: unsupported") })
            case .nss:
                #expect(hsm.capabilities.rsaDecryptionPath == .unwrapOAEP, "\(hsm.capabilities.report)")
            }
            let key = try await hsm.generateKeyPair(KeySpecification(label: "china", algorithm: .rsa2048, usage: [.decrypt, .unwrap]))
            guard case .rsa(let n, let e) = key.publicKey else {
                Issue.record("not RSA")
                return
            }
            let publicKey = try _RSA.Encryption.PublicKey(n: n, e: e)
            for _ in 0..<8 {
                let secret = Array(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) })
                let wrapped = Array(try publicKey.encrypt(secret, padding: .PKCS1_OAEP_SHA256))
                #expect(try await hsm.decryptOAEPSHA256(key.id, ciphertext: wrapped) == secret)
            }

            // A flipped bit is refused as bad input, not as an HSM failure.
            var tampered = Array(try publicKey.encrypt(Data(count: 16), padding: .PKCS1_OAEP_SHA256))
            tampered[100] ^= 0x01
            let error = await #expect(throws: PKCS11Error.self) { try await hsm.decryptOAEPSHA256(key.id, ciphertext: tampered) }
            #expect(error?.category == .badInput)
            // OAEP with SHA-1 is not what Apple uses, and must not decode.
            let sha1 = Array(try publicKey.encrypt(Data(count: 16), padding: .PKCS1_OAEP))
            await #expect(throws: PKCS11Error.self) { try await hsm.decryptOAEPSHA256(key.id, ciphertext: sha1) }
            let short = await #expect(throws: PKCS11Error.self) { try await hsm.decryptOAEPSHA256(key.id, ciphertext: [1, 2, 3]) }
            #expect(short?.category == .badInput)
            await hsm.close()
        }

        @Test func withoutPermissionSoftHSMHasNoRSAPath() async throws {
            let hsm = try await SoftHSMTestToken.make().open { $0.allowSoftwareOAEPDecoding = false }
            #expect(hsm.capabilities.rsaDecryptionPath == nil)
            let key = try await hsm.generateKeyPair(KeySpecification(label: "rsa", algorithm: .rsa2048, usage: [.decrypt]))
            let error = await #expect(throws: PKCS11Error.self) {
                try await hsm.decryptOAEPSHA256(key.id, ciphertext: [UInt8](repeating: 1, count: 256))
            }
            #expect(error?.code == .capabilityMissing(.rsaOAEPSHA256))
            #expect(error?.category == .misconfiguration)
            #expect(error?.message.contains("PAYWARDEN_HSM_ALLOW_SOFTWARE_OAEP=true") == true, "\(String(describing: error))")
            #expect(hsm.tokenDecryptionGaps.map(\.operation) == [.rsaOAEPSHA256])
            await hsm.close()
        }
    }
}
