import Foundation
import KeyCustody
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// `paywarden audit verify` and `audit public-key` as an operator and an auditor run them, on the
/// trail admin commands wrote: each command a writer of its own, its chain closed when it ends.
@Suite(.serialized, .releasesTestResources)
struct AuditVerifyCommandTests {
    @Test func theTrailAdminCommandsWriteVerifiesAndAChangedLineIsNamed() async throws {
        let env = try await AdminTestEnvironment.make()
        for merchant in ["merchant.com.audit-one", "merchant.com.audit-two"] {
            let created = try env.paywarden("keys", "create", "--merchant-id", merchant)
            #expect(created.status == 0, "\(created.stderr)")
        }
        let refused = try env.paywarden("keys", "retire", "0123456789abcdef")
        #expect(refused.status != 0)
        let path = env.home + "/audit/audit.jsonl"
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 6, "three commands, a record and a final checkpoint each: \(lines)")
        #expect(lines.allSatisfy { $0.contains(#""mac":""#) && $0.contains(#""writer":""#) })
        let actions = try env.audit().map(\.action)
        #expect(actions == ["keys.create", "keys.create", "keys.retire"], "\(actions)")

        let verified = try env.paywarden("audit", "verify")
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains("verified: 6 lines of 3 writers in 1 files, 3 checkpoints, 0 unsealed"), "\(verified.stdout)")

        let publicKey = try env.paywarden("audit", "public-key")
        #expect(publicKey.status == 0 && publicKey.stdout.hasPrefix("-----BEGIN PUBLIC KEY-----"), "\(publicKey.stderr)")
        let pem = try env.write(Array(publicKey.stdout.utf8), named: "audit-signing.pem")
        let offline = try env.paywarden("audit", "verify", path, "--public-key", pem)
        #expect(offline.status == 0 && offline.stdout.contains("checkpoints checked with the public key"), "\(offline.stdout)")

        // The second command's record made to say it was refused.
        var tampered = lines.map(String.init)
        tampered[2] = tampered[2].replacingOccurrences(of: #""result":"ok""#, with: #""result":"refused""#)
        try Data((tampered.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
        let caught = try env.paywarden("audit", "verify")
        #expect(caught.status == 1, "\(caught.stdout)")
        #expect(caught.stdout.hasPrefix("audit.jsonl:3: changed or forged"), "\(caught.stdout)")
        #expect(caught.stderr.contains("the first at audit.jsonl:3"), "\(caught.stderr)")
        let caughtOffline = try env.paywarden("audit", "verify", path, "--public-key", pem)
        #expect(caughtOffline.status == 1 && caughtOffline.stdout.hasPrefix("audit.jsonl:4: changed"), "\(caughtOffline.stdout)")

        let notAKey = try env.paywarden("audit", "verify", path, "--public-key", path)
        #expect(notAKey.status == 1 && notAKey.stderr.contains("is not a P-256 public key in PEM"), "\(notAKey.stderr)")
    }
}
