import Crypto
import Foundation
import PKCS11
import PaywardenTesting
import Testing

extension HSMTests {
    /// The KDF's `C_DigestInit`, `C_DigestUpdate`, `C_DigestKey`, `C_DigestUpdate`, `C_DigestFinal`
    /// sequence runs on a worker's long-lived session: a failure midway must not leave the digest
    /// active there, or every later KDF on that session fails with `CKR_OPERATION_ACTIVE`.
    @Suite struct DigestSequence {
        @Test func aFailedDigestKeyLeavesTheSessionUsable() async throws {
            let device = try FaultInjectingPKCS11.make()
            let hsm = try await device.open(try await SoftHSMTestToken.make())
            let secret = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let otherInfo = Array("\u{0D}id-aes256-GCMApplePay merchant.com.digest".utf8)
            // The fault is injected before the call reaches SoftHSM, whose digest stays active:
            // exactly what a module failing inside C_DigestKey may leave behind.
            try device.fail("C_DigestKey", with: .generalError, times: 1)
            let (failure, derived) = try await hsm.withSession(retryingAfterLostLogin: false) {
                session throws(PKCS11Error) -> (PKCS11Error?, [UInt8]) in
                let handle = try session.createObject([
                    .objectClass(.secretKey), .keyType(.genericSecret), .bool(.token, false),
                    .bool(.sensitive, true), .bool(.extractable, false), Attribute(.value, bytes: secret),
                ])
                defer { try? session.destroyObject(handle) }
                var failure: PKCS11Error?
                do throws(PKCS11Error) {
                    _ = try session.concatenationKDF(secret: handle, otherInfo: otherInfo)
                } catch {
                    failure = error
                }
                // The same session, at once: its next digest must start and be right.
                return (failure, try session.concatenationKDF(secret: handle, otherInfo: otherInfo))
            }
            #expect(failure?.function == "C_DigestKey")
            #expect(failure?.returnValue == .generalError)
            var expected = SHA256()
            expected.update(data: [0, 0, 0, 1] + secret + otherInfo)
            #expect(derived == Array(expected.finalize()))
            await hsm.close()
        }
    }
}
