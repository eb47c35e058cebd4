import PaywardenStorage

/// What a driver gives the shared stores: statements with `$1`, `$2`… parameters in the order
/// they first appear (PostgreSQL's form, which SQLite reads as named parameters bound by
/// position). Errors arrive already categorised.
public protocol SQLExecutor: Sendable {
    /// Runs `sql` and returns its rows, each a value per selected column. `writes` tells a driver
    /// with separate readers and a writer (SQLite's pool) where to run it. A write is durable
    /// when this returns.
    func execute(_ sql: String, _ binds: [SQLValue], writes: Bool) async throws(StorageError) -> [[SQLValue]]
    /// Runs `steps` as one atomic write: every step's effect, or (a failed statement, an unmet
    /// requirement) none. The outcome is decided when this returns, and later writes see it; it
    /// survives a crash once ``awaitDurable(_:)`` returns for the ticket.
    func write(_ steps: [SQLWriteStep]) async throws(StorageError) -> SQLWrite
    /// Returns once the write given `ticket` is durable; throws when it was lost.
    func awaitDurable(_ ticket: CommitTicket) async throws(StorageError)
}

extension SQLExecutor {
    /// ``write(_:)``, answered once durable.
    public func writeDurably(_ steps: [SQLWriteStep]) async throws(StorageError) -> SQLWriteOutcome {
        let write = try await write(steps)
        try await awaitDurable(write.ticket)
        return write.outcome
    }
}
