import PaywardenStorage

/// A database engine under ``SQLDatabase``: statements, and what differs between engines (the
/// schema's DDL, how migrations are recorded and serialised, which tables exist).
public protocol SQLDriver: SQLExecutor {
    var driver: String { get }
    var location: String { get }
    func schemaStatus() async throws(StorageError) -> SchemaStatus
    func migrate() async throws(StorageError) -> [String]
    /// Which of `names` exist as tables.
    func existingTables(_ names: [String]) async throws(StorageError) -> Set<String>
    /// Every table, the engine's record of applied migrations left out.
    func tableNames() async throws(StorageError) -> Set<String>
    /// How `table` is declared (``SQLTableLayout``).
    func layout(of table: String) async throws(StorageError) -> SQLTableLayout
    /// `column` as ORDER BY and comparisons should name it to order text byte for byte (SQLite's
    /// BINARY collation does; PostgreSQL's default follows the cluster's locale).
    func byteOrdered(_ column: SQLTableLayout.Column) -> String
    /// Housekeeping the service runs every second (SQLite's checkpoint); nothing by default.
    func performMaintenance() async
    /// Whether replay claims go to the database in batches (``ReplayClaimBatcher``: one upsert
    /// for the claims that arrive while one is being sent), for an engine whose every statement
    /// is a round trip; otherwise each claim is a statement of its own (SQLite's, on the caller's
    /// thread, costs a few microseconds).
    var batchesReplayClaims: Bool { get }
}

extension SQLDriver {
    public func performMaintenance() async {}
    public var batchesReplayClaims: Bool { false }
}
