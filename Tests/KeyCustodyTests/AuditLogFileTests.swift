import Foundation
import KeyCustody
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The audit log keeps its file open between records and opens it again when it was rotated
/// (renamed or deleted), truncated in place, or asked to (`SIGHUP`): no record is written into a
/// file the operator moved away, and none is lost.
@Suite(.serialized, .releasesTestResources)
struct AuditLogFileTests {
    private func record(_ detail: String) -> AuditLog.Record {
        AuditLog.Record(time: Date(), user: "test", action: "audit-file", keyID: nil, merchantID: nil, result: "ok", detail: detail)
    }

    @Test func aRotatedOrTruncatedLogIsOpenedAgainAndNothingIsLost() async throws {
        let directory = NSTemporaryDirectory() + "paywarden-audit-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: directory)
        let path = directory + "/audit/audit.jsonl"
        let log = AuditLog(path: path)
        try await log.append(record("first"))
        try await log.append(record("second"))
        #expect(try log.records().map(\.detail) == ["first", "second"])
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)

        // logrotate's rename: the next record starts the new file; the old one keeps its lines.
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
        try await log.append(record("after rename"))
        #expect(try log.records().map(\.detail) == ["after rename"])
        #expect(try AuditLog(path: path + ".1").records().map(\.detail) == ["first", "second"])
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)

        // Deleted: created again.
        try FileManager.default.removeItem(atPath: path)
        try await log.append(record("after delete"))
        #expect(try log.records().map(\.detail) == ["after delete"])

        // copytruncate: the file is emptied in place; the next line starts it again.
        try Data().write(to: URL(fileURLWithPath: path))
        try await log.append(record("after truncate"))
        #expect(try log.records().map(\.detail) == ["after truncate"])

        // SIGHUP's reopen, and a second writer (the CLI) on the same file: every line is there.
        AuditLog.reopenAll()
        try await AuditLog(path: path).append(record("from another writer"))
        try await log.append(record("after reopen"))
        #expect(try log.records().map(\.detail) == ["after truncate", "from another writer", "after reopen"])
    }
}
