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
    /// Whether concurrent writes already share a commit (SQLite's group commit): the replay
    /// ledger then sends each claim as it comes instead of batching claims itself. False by default.
    var commitsWritesInGroups: Bool { get }
}

extension SQLDriver {
    public func performMaintenance() async {}
    public var commitsWritesInGroups: Bool { false }
}
