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
    /// Housekeeping the service runs every second (SQLite's checkpoint); nothing by default.
    func performMaintenance() async
}

extension SQLDriver {
    public func performMaintenance() async {}
}
