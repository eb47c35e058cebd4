import Foundation
import PaywardenPrimitives
import Testing

/// The rule itself, for owners a test cannot create without root: a file of the process's user
/// is owner-only; root's may be read by its group (an administrator's grant, systemd's
/// credentials); anyone else's is refused, and so is a link of anyone else's.
struct SecretFileRuleTests {
    let service: UInt32 = 1000
    let other: UInt32 = 1001

    @Test func theProcesssUsersFileIsOwnerOnly() {
        for mode: UInt32 in [0o600, 0o400, 0o100600] {
            #expect(SecretFileRule.violation(owner: service, mode: mode, user: service, path: "/p") == nil, "\(String(mode, radix: 8))")
        }
        for mode: UInt32 in [0o644, 0o640, 0o604, 0o620, 0o610, 0o601, 0o100640] {
            let refusal = SecretFileRule.violation(owner: service, mode: mode, user: service, path: "/p")
            #expect(refusal?.contains("chmod 600 /p") == true, "\(String(mode, radix: 8)): \(refusal ?? "accepted")")
        }
    }

    /// PostgreSQL's exception: a root-owned file may be readable by its group when the service
    /// runs as another user (systemd's `LoadCredential` files: 0400 root, 0440 with an ACL).
    @Test func rootsFileMayBeReadByItsGroup() {
        for mode: UInt32 in [0o400, 0o440, 0o600, 0o640] {
            #expect(SecretFileRule.violation(owner: 0, mode: mode, user: service, path: "/p") == nil, "\(String(mode, radix: 8))")
        }
        for mode: UInt32 in [0o644, 0o604, 0o660, 0o650] {
            let refusal = SecretFileRule.violation(owner: 0, mode: mode, user: service, path: "/p")
            #expect(refusal?.contains("chmod 640 /p") == true, "\(String(mode, radix: 8)): \(refusal ?? "accepted")")
        }
        // Running as root, root's file is the process's own: owner-only.
        #expect(SecretFileRule.violation(owner: 0, mode: 0o640, user: 0, path: "/p")?.contains("chmod 600 /p") == true)
        #expect(SecretFileRule.violation(owner: 0, mode: 0o400, user: 0, path: "/p") == nil)
    }

    @Test func anotherUsersFileOrLinkIsRefused() {
        let refusal = SecretFileRule.violation(owner: other, mode: 0o600, user: service, path: "/p")
        #expect(refusal?.contains("owned by user 1001") == true && refusal?.contains("chown 1000 /p") == true, "\(refusal ?? "accepted")")
        #expect(SecretFileRule.linkViolation(owner: service, user: service, path: "/l") == nil)
        #expect(SecretFileRule.linkViolation(owner: 0, user: service, path: "/l") == nil)
        #expect(SecretFileRule.linkViolation(owner: other, user: service, path: "/l")?.contains("symbolic link owned by user 1001") == true)
    }

    /// Nothing to examine: the read that follows fails and says so.
    @Test func aMissingFileIsLeftToTheRead() {
        #expect(SecretFileRule.violation(at: "/nonexistent/paywarden-\(UUID().uuidString)") == nil)
    }
}
