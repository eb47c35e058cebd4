import Foundation
import PaywardenStorage

/// Every store in SQL that SQLite and PostgreSQL both run as written: one statement per
/// operation, atomic on its own (no read-then-write), or a few held together as one atomic write
/// (``SQLExecutor/write(_:)``), so several instances can share a database.
public final class SQLDatabase<Driver: SQLDriver>: PaywardenDatabase {
    public let engine: Driver
    /// For an engine whose every statement is a round trip (``SQLDriver/batchesReplayClaims``).
    private let replayClaims: ReplayClaimBatcher<Driver>?

    public init(_ engine: Driver) {
        self.engine = engine
        replayClaims = engine.batchesReplayClaims ? ReplayClaimBatcher(engine: engine) : nil
    }

    public var driver: String { engine.driver }
    public var location: String { engine.location }

    public func checkConnection() async throws(StorageError) {
        _ = try await engine.execute("SELECT 1", [], writes: false)
    }

    public func rowCounts() async throws(StorageError) -> [(table: String, rows: Int)] {
        let existing = try await engine.existingTables(Schema.tables)
        var counts: [(table: String, rows: Int)] = []
        for table in Schema.tables where existing.contains(table) {
            let rows = try await engine.execute("SELECT count(*) FROM \(table)", [], writes: false)
            counts.append((table, try SQLRowReader(rows.first ?? [], columns: ["count"], table: table).integer(0)))
        }
        return counts
    }

    public func performMaintenance() async { await engine.performMaintenance() }

    public func keyUsage() async throws(StorageError) -> [KeyUsage] {
        // A tombstone's key_id is NULL: it protects nothing and is left out of the count. Queried
        // in the uses' declared order; each use's keys are sorted here, not by ORDER BY, whose
        // text collation PostgreSQL takes from the cluster's locale.
        let queries: [(use: KeyUsage.Use, table: String, sql: String)] = [
            (.registrationPayloads, "registrations", "SELECT key_id, count(*) FROM registrations WHERE key_id IS NOT NULL GROUP BY key_id"),
            (.tokenPayloads, "high_value_tokens", "SELECT key_id, count(*) FROM high_value_tokens GROUP BY key_id"),
            (
                .tokenFingerprints, "high_value_tokens",
                "SELECT fingerprint_key_id, count(*) FROM high_value_tokens GROUP BY fingerprint_key_id"
            ),
        ]
        var usage: [KeyUsage] = []
        for query in queries {
            var keys: [KeyUsage] = []
            for values in try await read(query.sql, []) {
                let row = SQLRowReader(values, columns: ["key_id", "count"], table: query.table)
                keys.append(KeyUsage(use: query.use, keyID: try row.text(0), rows: try row.integer(1)))
            }
            usage += keys.sorted { $0.keyID < $1.keyID }
        }
        return usage
    }

    public func schemaStatus() async throws(StorageError) -> SchemaStatus { try await engine.schemaStatus() }
    public func migrate() async throws(StorageError) -> [String] { try await engine.migrate() }

    func write(_ sql: String, _ binds: [SQLValue]) async throws(StorageError) -> [[SQLValue]] {
        try await engine.execute(sql, binds, writes: true)
    }

    func read(_ sql: String, _ binds: [SQLValue]) async throws(StorageError) -> [[SQLValue]] {
        try await engine.execute(sql, binds, writes: false)
    }

    /// A read's rows, each made a record by `record`.
    func read<Record>(
        _ sql: String, _ binds: [SQLValue], as record: (_ row: [SQLValue]) throws(StorageError) -> Record
    ) async throws(StorageError) -> [Record] {
        var records: [Record] = []
        for row in try await read(sql, binds) { records.append(try record(row)) }
        return records
    }
}

// MARK: - ReplayLedger

extension SQLDatabase: ReplayLedger {
    /// Inserts, or takes over a row that expired; a live row is left alone.
    static var claimStatement: String {
        """
        INSERT INTO replay_ledger (transaction_id, expires_at) VALUES ($1, $2)
        ON CONFLICT (transaction_id) DO UPDATE SET expires_at = excluded.expires_at
        WHERE replay_ledger.expires_at <= $3
        RETURNING 1
        """
    }

    static func claimStep(_ transactionID: [UInt8], until expiry: Date, now: Date) -> SQLWriteStep {
        SQLWriteStep(claimStatement, [.blob(transactionID), SQLValue(expiry), SQLValue(now)], requiring: .rows)
    }

    public func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws(StorageError) -> LedgerClaim {
        if let replayClaims {
            // One upsert for the claims arriving meanwhile, answered once committed.
            return LedgerClaim(claimed: try await replayClaims.claim(transactionID, until: expiry, now: now), ticket: .durable)
        }
        let write = try await engine.write([Self.claimStep(transactionID, until: expiry, now: now)])
        if case .stopped = write.outcome { return LedgerClaim(claimed: false, ticket: write.ticket) }
        return LedgerClaim(claimed: true, ticket: write.ticket)
    }

    public func awaitDurable(_ ticket: CommitTicket) async throws(StorageError) {
        try await engine.awaitDurable(ticket)
    }

    public func isClaimed(_ transactionID: [UInt8], now: Date) async throws(StorageError) -> Bool {
        try await !read(
            "SELECT 1 FROM replay_ledger WHERE transaction_id = $1 AND expires_at > $2", [.blob(transactionID), SQLValue(now)]
        ).isEmpty
    }

    public func releaseTransaction(_ transactionID: [UInt8]) async throws(StorageError) {
        _ = try await write("DELETE FROM replay_ledger WHERE transaction_id = $1", [.blob(transactionID)])
    }

    public func purgeExpiredTransactions(now: Date, limit: Int) async throws(StorageError) -> Int {
        try await write(
            """
            DELETE FROM replay_ledger WHERE transaction_id IN
              (SELECT transaction_id FROM replay_ledger WHERE expires_at <= $1 LIMIT $2)
            RETURNING 1
            """, [SQLValue(now), SQLValue(limit)]
        ).count
    }
}
