import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import Testing

extension HSMTests {
    /// The KDF's `C_DigestInit`, `C_DigestUpdate`, `C_DigestKey`, `C_DigestUpdate`, `C_DigestFinal`
    /// sequence runs on a worker's long-lived session: a failure midway must not leave the digest
    /// active there, or every later KDF on that session fails with `CKR_OPERATION_ACTIVE`.
    @Suite struct DigestSequence {
        static let secret = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        static let otherInfo = Array("\u{0D}id-aes256-GCMApplePay merchant.com.digest".utf8)

        /// SHA-256(00000001 ‖ secret ‖ otherInfo), in software.
        static var expected: [UInt8] {
            var hash = SHA256()
            hash.update(data: [0, 0, 0, 1] + secret + otherInfo)
            return Array(hash.finalize())
        }

        /// A session secret key holding ``secret``, sensitive and not extractable like a derived Z.
        static func createSecret(_ session: Session) throws(PKCS11Error) -> ObjectHandle {
            try session.createObject([
                .objectClass(.secretKey), .keyType(.genericSecret), .bool(.token, false),
                .bool(.sensitive, true), .bool(.extractable, false), Attribute(.value, bytes: secret),
            ])
        }

        /// SoftHSM returns CKR_OBJECT_HANDLE_INVALID from C_DigestKey for a handle that names
        /// nothing and leaves its digest active: the next KDF on the same session must still work.
        @Test func aFailedDigestKeyLeavesTheSessionUsable() async throws {
            let hsm = try await TestToken.make().open()
            let (failure, derived) = try await hsm.withSession(retryingAfterLostLogin: false) {
                session throws(PKCS11Error) -> (PKCS11Error?, [UInt8]) in
                let secret = try Self.createSecret(session)
                defer { try? session.destroyObject(secret) }
                let destroyed = try Self.createSecret(session)
                try session.destroyObject(destroyed)
                var failure: PKCS11Error?
                do throws(PKCS11Error) {
                    _ = try session.concatenationKDF(secret: destroyed, otherInfo: Self.otherInfo)
                } catch {
                    failure = error
                }
                // The same session, at once: its next digest must start and be right.
                return (failure, try session.concatenationKDF(secret: secret, otherInfo: Self.otherInfo))
            }
            #expect(failure?.function == "C_DigestKey")
            #expect(failure?.returnValue == .objectHandleInvalid || failure?.returnValue == .keyHandleInvalid)
            #expect(derived == Self.expected)
            await hsm.close()
        }

        /// A module that ends the digest itself when C_DigestKey fails (the fault-injecting one
        /// does, as PKCS#11 asks): ending it again finds nothing active and the session goes on.
        @Test func aDigestKeyFailureThatEndedTheDigestLeavesTheSessionUsable() async throws {
            let device = try FaultInjectingPKCS11.make()
            let hsm = try await device.open(try await SoftHSMTestToken.make())
            try device.fail("C_DigestKey", with: .generalError, times: 1)
            let (failure, derived) = try await hsm.withSession(retryingAfterLostLogin: false) {
                session throws(PKCS11Error) -> (PKCS11Error?, [UInt8]) in
                let secret = try Self.createSecret(session)
                defer { try? session.destroyObject(secret) }
                var failure: PKCS11Error?
                do throws(PKCS11Error) {
                    _ = try session.concatenationKDF(secret: secret, otherInfo: Self.otherInfo)
                } catch {
                    failure = error
                }
                return (failure, try session.concatenationKDF(secret: secret, otherInfo: Self.otherInfo))
            }
            #expect(failure?.function == "C_DigestKey")
            #expect(failure?.returnValue == .generalError)
            #expect(derived == Self.expected)
            await hsm.close()
        }
    }
}
