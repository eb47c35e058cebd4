import Crypto
import Foundation
import KeyCustody
import PKCS11
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

/// The audit trail sealed in a real token: each writer's lines chained by an HMAC key in the HSM,
/// checkpoints signed by an EC key in the HSM, and `AuditVerifier` finding each kind of tampering
/// at its line, with the HSM and with the public key alone.
@Suite(.serialized, .releasesTestResources)
struct AuditChainTests {
    private static func record(_ detail: String, action: String = "audit-chain") -> AuditLog.Record {
        AuditLog.Record(
            time: Date(), user: "test", action: action, keyID: nil, merchantID: "merchant.com.example", result: "ok", detail: detail)
    }

    private static func directory() -> String {
        let directory = NSTemporaryDirectory() + "paywarden-audit-chain-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: directory)
        return directory
    }

    @Test func theAuditKeysAreMadeInTheHSMSensitiveAndNeverExtractableAndFoundAgain() async throws {
        let token = try await TestToken.make()
        let hsm = try await token.open()
        let keys = try await AuditKeys.open(hsm)
        let again = try await AuditKeys.open(hsm)
        #expect(again.mac == keys.mac && again.signing == keys.signing)
        let (macAttributes, signingAttributes) = try await hsm.withSession { session throws(PKCS11Error) in
            let mac = try session.tokenObjects(.secretKey, id: keys.mac)[0]
            let signing = try session.tokenObjects(.privateKey, id: keys.signing)[0]
            return (
                try session.attributes(of: mac, [.sensitive, .extractable, .sign, .token]),
                try session.attributes(of: signing, [.sensitive, .extractable, .sign, .derive, .token])
            )
        }
        #expect(macAttributes[.sensitive] == [1] && macAttributes[.extractable] == [0] && macAttributes[.token] == [1])
        #expect(macAttributes[.sign] == [1])
        #expect(signingAttributes[.sensitive] == [1] && signingAttributes[.extractable] == [0] && signingAttributes[.token] == [1])
        #expect(signingAttributes[.sign] == [1] && signingAttributes[.derive] == [0])
        // Never a merchant's key, nor one waiting to be adopted.
        #expect(try await AuditKeys.signingKeys(hsm).count == 1)
        await hsm.close()
    }

    /// 100,000 lines from eight writers at once (as instances and admin commands append to one
    /// file, each a chain of its own under the token's audit keys), checkpointed as they go: every
    /// line verifies, with the HSM and with the public key. On SoftHSM only (the Makefile's
    /// SOFTHSM_ONLY): the chain is the same code on either module, and the keys' attributes are
    /// checked on both above.
    @Test func aCleanLogOfAHundredThousandLinesFromConcurrentWritersVerifies() async throws {
        let token = try await TestToken.make()
        let hsm = try await token.open()
        let path = Self.directory() + "/audit.jsonl"
        let writers = 8
        let perWriter = 12_500
        let keys = try await AuditKeys.open(hsm)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    let log = AuditLog(path: path).sealed(by: AuditChain(hsm: hsm, keys: keys))
                    for line in 0..<perWriter {
                        try await log.append(Self.record("writer \(writer) line \(line)"))
                        if line % 3_000 == 2_999 { try await log.checkpoint() }
                    }
                    try await log.checkpoint(final: true)
                }
            }
            try await group.waitForAll()
        }
        let report = try await AuditVerifier.checkingMACs(in: hsm).verify(files: [path])
        #expect(report.verified, "\(report.failures.prefix(5))")
        #expect(report.writers == writers && report.unsealed == 0)
        #expect(report.macsChecked == report.lines && report.lines == writers * perWriter + report.checkpoints)
        #expect(report.checkpoints == writers * 5)
        let publicReport = try await AuditVerifier(publicKeys: [keys.publicKey]).verify(files: [path])
        #expect(publicReport.verified && publicReport.macsChecked == 0, "\(publicReport.failures.prefix(5).map(\.description))")
        await hsm.close()
    }

    /// One writer's 30 lines in three rotated files, checkpointed every ten lines and closed.
    private struct Trail {
        let files: [String]
        /// Every file's lines, newline included.
        let lines: [[Data]]

        func write(_ lines: [[Data]]) throws {
            for (file, content) in zip(files, lines) { try Data(content.joined()).write(to: URL(fileURLWithPath: file)) }
        }

        /// The files with `change` applied to their lines.
        func tampered(_ change: (inout [[Data]]) -> Void) throws -> [String] {
            var copy = lines
            change(&copy)
            try write(copy)
            return files
        }
    }

    private static func trail(_ hsm: HSM) async throws -> Trail {
        let directory = Self.directory()
        let path = directory + "/audit.jsonl"
        let log = AuditLog(path: path).sealed(by: try await AuditChain.open(hsm))
        for line in 1...30 {
            try await log.append(Self.record("line \(line)"))
            if line % 10 == 0 { try await log.checkpoint() }
        }
        try await log.checkpoint(final: true)
        let all = try Data(contentsOf: URL(fileURLWithPath: path)).split(separator: 0x0A).map { Data($0) + [0x0A] }
        #expect(all.count == 34)
        // audit.jsonl.2 (oldest), audit.jsonl.1, audit.jsonl, as logrotate leaves them.
        let files = [path + ".2", path + ".1", path]
        return Trail(files: files, lines: [Array(all[0..<12]), Array(all[12..<24]), Array(all[24...])])
    }

    @Test func everyTamperingIsReportedAtItsLineWithTheHSMAndBetweenCheckpointsWithThePublicKey() async throws {
        let token = try await TestToken.make()
        let hsm = try await token.open()
        let trail = try await Self.trail(hsm)
        let verifier = try await AuditVerifier.checkingMACs(in: hsm)
        let publicOnly = AuditVerifier(publicKeys: [try await AuditKeys.open(hsm).publicKey])

        try trail.write(trail.lines)
        let clean = try await verifier.verify(files: trail.files)
        #expect(clean.verified && clean.lines == 34 && clean.checkpoints == 4 && clean.macsChecked == 34, "\(clean.findings)")
        #expect(try await publicOnly.verify(files: trail.files).verified)

        // Under another token's audit keys no MAC verifies: one finding per writer, not one a line.
        // (A SoftHSM token: NSS softokn is one configuration per process.)
        let otherToken = try await TestToken.make(backend: .softHSM)
        let other = try await otherToken.open()
        _ = try await AuditKeys.open(other)
        let elsewhere = try await AuditVerifier.checkingMACs(in: other).verify(files: trail.files)
        let macFindings = elsewhere.failures.filter { $0.message.contains("MAC") }
        #expect(macFindings.count == 1 && macFindings[0].message.contains("another token's audit key"), "\(elsewhere.findings)")
        await other.close()

        // A file logrotate has just emptied adds nothing.
        let emptied = (trail.files[2] as NSString).deletingLastPathComponent + "/audit.jsonl.new"
        try Data().write(to: URL(fileURLWithPath: emptied))
        let withEmpty = try await verifier.verify(files: trail.files + [emptied])
        #expect(withEmpty.verified && withEmpty.lines == 34, "\(withEmpty.findings)")

        // A byte changed (a detail's digit) in the second file's fourth line.
        let changed = try trail.tampered { lines in
            var line = [UInt8](lines[1][3])
            let index = try! #require(line.firstIndex(of: UInt8(ascii: "1")))
            line[index] = UInt8(ascii: "7")
            lines[1][3] = Data(line)
        }
        var report = try await verifier.verify(files: changed)
        #expect(report.failures.first?.file == "audit.jsonl.1" && report.failures.first?.line == 4, "\(report.findings)")
        #expect(report.failures.first?.message.contains("changed or forged") == true, "\(report.findings)")
        report = try await publicOnly.verify(files: changed)
        // Line 16 of the chain (file 2, line 4) lies between the checkpoints after lines 10 and 20:
        // the second, at the second file's tenth line (seq 22), no longer matches.
        #expect(
            report.failures.count == 1 && report.failures.first?.file == "audit.jsonl.1" && report.failures.first?.line == 10,
            "\(report.findings)")

        // A line deleted: reported at the line after the gap.
        let deleted = try trail.tampered { $0[0].remove(at: 5) }
        report = try await verifier.verify(files: deleted)
        #expect(report.failures.first?.file == "audit.jsonl.2" && report.failures.first?.line == 6, "\(report.findings)")
        #expect(report.failures.first?.message.contains("removed: 1 line") == true, "\(report.findings)")
        #expect(!(try await publicOnly.verify(files: deleted).verified))

        // Two lines swapped.
        let swapped = try trail.tampered { $0[1].swapAt(2, 3) }
        report = try await verifier.verify(files: swapped)
        #expect(report.failures.first?.file == "audit.jsonl.1" && report.failures.first?.line == 4, "\(report.findings)")
        #expect(report.failures.first?.message.contains("out of order") == true, "\(report.findings)")
        #expect(!(try await publicOnly.verify(files: swapped).verified))

        // A line repeated (a real line, inserted again).
        let repeated = try trail.tampered { $0[2].insert($0[0][2], at: 1) }
        report = try await verifier.verify(files: repeated)
        #expect(report.failures.first?.file == "audit.jsonl" && report.failures.first?.line == 2, "\(report.findings)")
        #expect(report.failures.first?.message.contains("inserted") == true, "\(report.findings)")

        // A line forged: well-formed, in sequence, with a MAC nobody without the HSM can make.
        let forged = try trail.tampered { lines in
            let text = String(decoding: lines[2][1], as: UTF8.self)
            lines[2][1] = Data(text.replacingOccurrences(of: "\"result\":\"ok\"", with: "\"result\":\"refused\"").utf8)
        }
        report = try await verifier.verify(files: forged)
        #expect(report.failures.first?.file == "audit.jsonl" && report.failures.first?.line == 2, "\(report.findings)")
        #expect(!(try await publicOnly.verify(files: forged).verified))

        // The tail cut: the chain ends without its final checkpoint.
        let cut = try trail.tampered { $0[2].removeLast(3) }
        for check in [verifier, publicOnly] {
            report = try await check.verify(files: cut)
            #expect(report.failures.count == 1 && report.failures.first?.line == 7, "\(report.findings)")
            #expect(report.failures.first?.message.contains("truncated") == true, "\(report.findings)")
        }

        // A file of the rotation removed: the gap is named between the files around it.
        try trail.write(trail.lines)
        report = try await verifier.verify(files: [trail.files[0], trail.files[2]])
        #expect(report.failures.first?.file == "audit.jsonl" && report.failures.first?.line == 1, "\(report.findings)")
        #expect(report.failures.first?.message.contains("between audit.jsonl.2 and audit.jsonl") == true, "\(report.findings)")
        #expect(!(try await publicOnly.verify(files: [trail.files[0], trail.files[2]]).verified))

        // The oldest file deleted by retention: a failure (its lines may as well have been removed),
        // a note when the operator says so (--partial).
        report = try await verifier.verify(files: Array(trail.files.dropFirst()))
        #expect(report.failures.first?.file == "audit.jsonl.1" && report.failures.first?.line == 1, "\(report.findings)")
        var partial = verifier
        partial.allowances = .partialStart
        report = try await partial.verify(files: Array(trail.files.dropFirst()))
        #expect(report.verified, "\(report.findings)")
        #expect(report.findings.contains { !$0.isFailure && $0.message.contains("files not given") })

        // A checkpoint line's record changed (its time): the signature covers it.
        let retimed = try trail.tampered { lines in
            let text = String(decoding: lines[0][10], as: UTF8.self)
            let time = try! #require(text.range(of: #""time":"[^"]*""#, options: .regularExpression))
            lines[0][10] = Data(text.replacingCharacters(in: time, with: #""time":"2020-01-01T00:00:00Z""#).utf8)
        }
        report = try await publicOnly.verify(files: retimed)
        #expect(report.failures.first?.line == 11 && report.failures.first?.message.contains("signature") == true, "\(report.findings)")

        // A MAC written in capitals: the same bytes to a lenient reader, a changed line here.
        let recased = try trail.tampered { lines in
            let text = String(decoding: lines[0][3], as: UTF8.self)
            let mac = try! #require(text.range(of: #""mac":"[0-9a-f]+""#, options: .regularExpression))
            lines[0][3] = Data(text.replacingCharacters(in: mac, with: text[mac].uppercased()).utf8)
        }
        #expect(try await verifier.verify(files: recased).failures.first?.line == 4)

        // A running writer's open chain: a failure unless allowed.
        let open = try trail.tampered { $0[2].removeLast() }
        #expect(!(try await verifier.verify(files: open).verified))
        var allowingOpen = verifier
        allowingOpen.allowances = .openChains
        #expect(try await allowingOpen.verify(files: open).verified)

        // A checkpoint's signature by another key, and an unsealed line: the first fails, the second is noted.
        let otherKey = P256.Signing.PrivateKey().publicKey
        #expect(!(try await AuditVerifier(publicKeys: [otherKey]).verify(files: trail.files).verified))
        let withUnsealed = try trail.tampered {
            $0[1].insert(Data(#"{"action":"keys-list","result":"ok","time":"2026-11-29T00:00:00Z","user":"root"}"#.utf8 + [0x0A]), at: 0)
        }
        report = try await verifier.verify(files: withUnsealed)
        #expect(report.failures.first?.message.hasPrefix("unsealed") == true && report.unsealed == 1, "\(report.findings)")
        var allowingUnsealed = verifier
        allowingUnsealed.allowances = .unsealed
        #expect(try await allowingUnsealed.verify(files: withUnsealed).verified)
        await hsm.close()
    }

    /// A writer checkpoints only when it wrote since its last checkpoint (an idle server signs
    /// nothing), and after its final checkpoint a line goes unsealed rather than reopen its chain.
    @Test func anIdleWriterSignsNothingAndAClosedChainTakesNoLine() async throws {
        let token = try await TestToken.make()
        let hsm = try await token.open()
        let path = Self.directory() + "/audit.jsonl"
        let unsealed = Mutex<[String]>([])
        let chain = AuditChain(hsm: hsm, keys: try await AuditKeys.open(hsm)) { reason in unsealed.withLock { $0.append(reason) } }
        let log = AuditLog(path: path).sealed(by: chain)
        try await log.checkpoint()
        try await log.append(Self.record("one"))
        try await log.checkpoint()
        try await log.checkpoint()
        try await log.checkpoint()
        try await log.checkpoint(final: true)
        try await log.append(Self.record("late"))
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4, "the record, one checkpoint, the final one, the late line: \(lines)")
        #expect(lines.last?.contains("\"mac\"") == false && unsealed.withLock { $0 } == ["the writer's chain was closed"])
        var verifier = try await AuditVerifier.checkingMACs(in: hsm)
        verifier.allowances = .unsealed
        let report = try await verifier.verify(files: [path])
        #expect(report.verified && report.unsealed == 1 && report.checkpoints == 2, "\(report.findings)")
        await hsm.close()
    }
}
