import PaywardenStorage

/// What a driver gives the shared stores: one statement at a time, with `$1`, `$2`… parameters in
/// the order they first appear (PostgreSQL's form, which SQLite reads as named parameters bound
/// by position). Errors arrive already categorised.
public protocol SQLExecutor: Sendable {
    /// Runs `sql` and returns its rows, each a value per selected column. `writes` tells a driver
    /// with separate readers and a writer (SQLite's pool) where to run it.
    func execute(_ sql: String, _ binds: [SQLValue], writes: Bool) async throws(StorageError) -> [[SQLValue]]
}
