import Foundation
import PaywardenStorage
import PaywardenStorageSQL

/// Rows in every table a database has, made from each table's declaration rather than a list: a
/// table a later migration adds is filled too, so a copy that leaves it out fails its test. Text
/// keys differ in case and accents (ordered differently by a locale than byte for byte), bytes
/// include 0x00 and 0xff, nullable columns are NULL in every other row; `rows` per table, one
/// where an integer is part of the key (`domain_associations`' single row).
enum EveryTableRows {
    static func fill(_ engine: any SQLDriver, rows: Int = 3, largeTable: String = "replay_ledger", largeRows: Int = 1203) async throws {
        for table in try await engine.tableNames().sorted() {
            let layout = try await engine.layout(of: table)
            let kinds = try await columnKinds(engine, table)
            let hasIntegerKey = layout.primaryKey.contains { kinds[$0] == .integer }
            let count = hasIntegerKey ? 1 : table == largeTable ? largeRows : rows
            let columns = layout.canonicalColumns
            var steps: [SQLWriteStep] = []
            for row in 0..<count {
                let values = columns.map { column in
                    value(
                        for: column, nullable: column.isNullable && !layout.primaryKey.contains(column.name),
                        kind: kinds[column.name] ?? .integer,
                        table: table, row: row)
                }
                let placeholders = values.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
                steps.append(
                    SQLWriteStep(
                        "INSERT INTO \(table) (\(columns.map(\.name).joined(separator: ", "))) VALUES (\(placeholders))", values))
            }
            _ = try await engine.writeDurably(steps)
        }
    }

    enum Kind { case text, integer, bytes }

    /// Whether each non-text column holds bytes or an integer (``SQLTableLayout`` tells text only):
    /// read from the declared type.
    private static func columnKinds(_ engine: any SQLDriver, _ table: String) async throws -> [String: Kind] {
        let sql =
            engine.driver == "sqlite"
            ? "SELECT name, type FROM pragma_table_info($1)"
            : "SELECT column_name::text, data_type::text FROM information_schema.columns WHERE table_schema = current_schema() "
                + "AND table_name = $1"
        var kinds: [String: Kind] = [:]
        for row in try await engine.execute(sql, [.text(table)], writes: false) {
            guard case .text(let name) = row[0], case .text(let type) = row[1] else { continue }
            switch type.lowercased() {
            case "text": kinds[name] = .text
            case "blob", "bytea": kinds[name] = .bytes
            default: kinds[name] = .integer
            }
        }
        return kinds
    }

    /// SQLite lets a TEXT PRIMARY KEY hold NULL (its layout says nullable); no row of Paywarden's does.
    private static func value(for column: SQLTableLayout.Column, nullable: Bool, kind: Kind, table: String, row: Int) -> SQLValue {
        if nullable, row % 2 == 1 { return .null }
        switch kind {
        case .text:
            let lead = ["a", "B", "é", "Z", "_"][row % 5]
            return .text("\(lead) \(table).\(column.name) #\(row) — 'quoted' ✓")
        case .integer:
            // 1 suits the flags (0 or 1) and domain_associations' key; times are milliseconds.
            return .integer(column.name.hasSuffix("_at") || column.name.hasSuffix("_until") ? 1_764_000_000_000 + Int64(row) : 1)
        case .bytes:
            return .blob(
                [0x00, 0xff] + withUnsafeBytes(of: UInt32(row).bigEndian, Array.init) + (0..<40).map { UInt8(($0 * 7 + row) & 0xff) })
        }
    }
}
