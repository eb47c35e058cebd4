import PaywardenStorage

/// A table read in pages in primary-key order, its text keys ordered byte for byte: the same
/// rows in the same order on SQLite and PostgreSQL, however many rows, without one long read.
/// Each row's values are in ``SQLTableLayout/canonicalColumns`` order.
public struct SQLTablePages: Sendable {
    public let layout: SQLTableLayout
    private let engine: any SQLDriver
    private let pageSize: Int

    public init(_ table: String, of engine: any SQLDriver, pageSize: Int = 500) async throws(StorageError) {
        let layout = try await engine.layout(of: table)
        guard !layout.primaryKey.isEmpty else {
            throw StorageError(.corrupt, "the table has no primary key to order its rows by", table: table)
        }
        self.layout = layout
        self.engine = engine
        self.pageSize = pageSize
    }

    /// Calls `body` with each page of rows, in order.
    public func forEachPage(_ body: ([[SQLValue]]) async throws -> Void) async throws {
        let columns = layout.canonicalColumns
        let keyColumns = layout.primaryKey.compactMap { name in columns.first { $0.name == name } }
        let keyIndexes = layout.primaryKey.compactMap { name in columns.firstIndex { $0.name == name } }
        let ordered = keyColumns.map(engine.byteOrdered)
        let select = "SELECT \(columns.map(\.name).joined(separator: ", ")) FROM \(layout.table)"
        let order = " ORDER BY \(ordered.joined(separator: ", ")) LIMIT \(pageSize)"
        let parameters = (1...keyColumns.count).map { "$\($0)" }.joined(separator: ", ")
        let after = " WHERE (\(ordered.joined(separator: ", "))) > (\(parameters))"
        var last: [SQLValue]?
        while true {
            let rows = try await engine.execute(select + (last == nil ? "" : after) + order, last ?? [], writes: false)
            if rows.isEmpty { return }
            try await body(rows)
            if rows.count < pageSize { return }
            last = keyIndexes.map { rows[rows.count - 1][$0] }
        }
    }

    /// Inserts `rows` (values in canonical column order) into the same table on `target`, as one
    /// durable write.
    public func insert(_ rows: [[SQLValue]], into target: any SQLDriver) async throws(StorageError) {
        guard !rows.isEmpty else { return }
        let names = layout.canonicalColumns.map(\.name)
        var placeholders: [String] = []
        var binds: [SQLValue] = []
        for row in rows {
            let first = binds.count
            placeholders.append("(" + row.indices.map { "$\(first + $0 + 1)" }.joined(separator: ", ") + ")")
            binds += row
        }
        let sql = "INSERT INTO \(layout.table) (\(names.joined(separator: ", "))) VALUES \(placeholders.joined(separator: ", "))"
        _ = try await target.writeDurably([SQLWriteStep(sql, binds)])
    }
}

/// A database whose stores run on an ``SQLDriver``: what copying between databases reaches through.
public protocol SQLDriverBacked {
    var sqlDriver: any SQLDriver { get }
}

extension SQLDatabase: SQLDriverBacked {
    public var sqlDriver: any SQLDriver { engine }
}
