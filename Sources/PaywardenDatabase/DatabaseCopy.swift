import Crypto
import Foundation
import PaywardenStorage
import PaywardenStoragePostgres
import PaywardenStorageSQL
import PaywardenStorageSQLite

/// Copies every table of one SQL database into an empty one, on either engine, row for row and
/// byte for byte, and compares the two by a digest of each table's rows.
///
/// A table's digest is SHA-256 over its rows in primary-key order (text ordered byte for byte),
/// each row's values in the order of their column names, each value encoded the same on every
/// engine: NULL as 0x00; an integer as 0x01 and 8 bytes big-endian; text as 0x02, its UTF-8
/// length in 8 bytes big-endian and its UTF-8; bytes as 0x03, their length likewise and the
/// bytes. Flags are integers on both engines, times integer milliseconds.
public enum DatabaseCopy {
    /// The tables to copy, in ``Schema/tables``' order; refuses a database holding a table this
    /// build does not know (a newer build's, which this one could not copy faithfully).
    public static func tables(of engine: any SQLDriver, location: String) async throws -> [String] {
        let existing = try await engine.tableNames()
        let unknown = existing.subtracting(Schema.tables)
        guard unknown.isEmpty else {
            throw CopyFailure(
                "the database at \(location) has tables this build does not know (\(unknown.sorted().joined(separator: ", "))): "
                    + "copy it with the Paywarden build that created them")
        }
        return Schema.tables.filter(existing.contains)
    }

    /// The first table of `engine` holding a row, and its rows: Paywarden's tables in their
    /// order, then any other (a database of something else is no target either).
    public static func firstNonEmptyTable(of engine: any SQLDriver) async throws -> (table: String, rows: Int)? {
        let existing = try await engine.tableNames()
        let others = existing.subtracting(Schema.tables).sorted()
        for table in Schema.tables.filter(existing.contains) + others {
            let rows = try await engine.execute("SELECT count(*) FROM \(table)", [], writes: false)
            if case .integer(let count)? = rows.first?.first, count > 0 { return (table, Int(count)) }
        }
        return nil
    }

    /// Copies `tables` from `source` into `target` (migrated and empty), a page at a time;
    /// `progress` is told each table's rows once copied.
    public static func copy(
        _ tables: [String], from source: any SQLDriver, to target: any SQLDriver, progress: (String, Int) -> Void = { _, _ in }
    ) async throws {
        for table in tables {
            let pages = try await SQLTablePages(table, of: source)
            let targetLayout = try await target.layout(of: table)
            guard Set(targetLayout.columns.map(\.name)) == Set(pages.layout.columns.map(\.name)) else {
                throw CopyFailure(
                    "\(table) has other columns at the target than at the source: migrate both with this build (`paywarden db migrate`)")
            }
            var rows = 0
            try await pages.forEachPage { page in
                try await pages.insert(page, into: target)
                rows += page.count
            }
            progress(table, rows)
        }
    }

    /// Each of `tables` on both databases: rows and digest.
    public static func compare(_ tables: [String], source: any SQLDriver, target: any SQLDriver) async throws -> [TableComparison] {
        var comparisons: [TableComparison] = []
        for table in tables {
            let (sourceRows, sourceDigest) = try await digest(table, of: source)
            let (targetRows, targetDigest) = try await digest(table, of: target)
            comparisons.append(
                TableComparison(
                    table: table, sourceRows: sourceRows, targetRows: targetRows, sourceDigest: sourceDigest, targetDigest: targetDigest))
        }
        return comparisons
    }

    /// The rows of `table` on `engine` and their digest (see the type's description).
    public static func digest(_ table: String, of engine: any SQLDriver) async throws -> (rows: Int, digest: String) {
        let pages = try await SQLTablePages(table, of: engine)
        var hash = SHA256()
        var rows = 0
        try await pages.forEachPage { page in
            for row in page {
                var encoded: [UInt8] = []
                for value in row { append(value, to: &encoded) }
                hash.update(data: encoded)
            }
            rows += page.count
        }
        return (rows, hash.finalize().map { String(format: "%02x", $0) }.joined())
    }

    private static func append(_ value: SQLValue, to bytes: inout [UInt8]) {
        func length(_ count: Int) { withUnsafeBytes(of: UInt64(count).bigEndian) { bytes += $0 } }
        switch value {
        case .null:
            bytes.append(0x00)
        case .integer(let integer):
            bytes.append(0x01)
            withUnsafeBytes(of: integer.bigEndian) { bytes += $0 }
        case .text(let text):
            bytes.append(0x02)
            length(text.utf8.count)
            bytes += text.utf8
        case .blob(let blob):
            bytes.append(0x03)
            length(blob.count)
            bytes += blob
        }
    }

    /// Refuses a source a running `serve` uses, where that can be seen: on SQLite, the shared
    /// lock every `serve` holds (``SQLiteServingLock``; the lock returned is held exclusive, so no
    /// `serve` starts while the copy reads); on PostgreSQL, sessions named
    /// ``PostgresConnectionSettings/servingApplicationName`` on the database.
    public static func refuseIfServed(_ engine: any SQLDriver) async throws -> SQLiteServingLock? {
        if let sqlite = engine as? SQLiteDriver {
            guard let lock = try SQLiteServingLock.take(.copying, databasePath: sqlite.path) else {
                throw CopyFailure(
                    "a running `paywarden serve` uses the database at \(sqlite.path) (it holds "
                        + "\(SQLiteServingLock.path(for: sqlite.path))): stop every instance, then copy")
            }
            return lock
        }
        if let postgres = engine as? PostgresDriver {
            let sessions = try await postgres.sessions(applicationName: PostgresConnectionSettings.servingApplicationName)
            guard sessions == 0 else {
                throw CopyFailure(
                    "a running `paywarden serve` uses the database at \(postgres.location) (\(sessions) session(s) named "
                        + "'\(PostgresConnectionSettings.servingApplicationName)' in pg_stat_activity): stop every instance, then copy")
            }
        }
        return nil
    }
}
