import Foundation
import Logging
import PaywardenStorage
import PaywardenStorageSQL
import PaywardenTestTraits
import PaywardenTesting
import Testing

@testable import PaywardenStoragePostgres

/// Migrations on PostgreSQL against the locks of other sessions: another instance's migration is
/// waited out however long it takes, an operator's cancel is reported as itself, and a table
/// locked by a long transaction is given up on, with nothing applied.
@Suite(.releasesTestResources)
struct PostgresMigrationLockTests {
    @Test("a migration waits out another instance's, past the statement timeout")
    func waitsPastTheStatementTimeout() async throws {
        try await Self.withTwoInstances { database, other in
            try await Self.whileHoldingTheMigrationLock(other) {
                let started = ContinuousClock.now
                let applied = try await database.migrate()
                #expect(applied == Schema.migrations)
                #expect(ContinuousClock.now - started > .milliseconds(600), "the migration must have waited for the lock")
            }
        }
    }

    @Test("a wait an operator cancels fails as a cancel, with nothing applied")
    func aCancelledWaitIsReportedAsItself() async throws {
        try await Self.withTwoInstances { database, other in
            try await Self.whileHoldingTheMigrationLock(other) {
                async let migrating = database.migrate()
                try await Self.wait(other, until: Self.advisoryLocks(granted: false), answers: "1")
                _ = try await other.engine.execute(
                    Self.advisoryLocks(granted: false).replacingOccurrences(of: "count(*)::text", with: "pg_cancel_backend(l.pid)::text"),
                    [],
                    writes: true)
                do {
                    _ = try await migrating
                    Issue.record("a cancelled migration succeeded")
                } catch {
                    // 57014 is the cancel; 25P02 ("transaction aborted") would be the next statement's.
                    #expect("\(error)".contains("57014"), "\(error)")
                }
            }
            #expect(try await other.schemaStatus().version == 0)
        }
    }

    @Test("DDL queued behind a long transaction gives up after the timeout, and nothing is applied")
    func aTableLockIsWaitedForAtMostTheTimeout() async throws {
        try await Self.withTwoInstances { database, other in
            // Just before the migration that alters high_value_tokens, which a long transaction reads.
            let altering = "0003_merchant_token_events"
            let before = Array(Schema.migrations.prefix { $0 != altering })
            let pending = Array(Schema.migrations.dropFirst(before.count))
            _ = try await other.engine.execute(
                "CREATE TABLE \(PostgresSchema.migrationsTable) (identifier TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)", [],
                writes: true)
            for identifier in before {
                for statement in SchemaDDL.statements(identifier, PostgresSchema.types) {
                    _ = try await other.engine.execute(statement, [], writes: true)
                }
                _ = try await other.engine.execute(
                    "INSERT INTO \(PostgresSchema.migrationsTable) VALUES ($1, 0)", [.text(identifier)], writes: true)
            }
            async let reader = other.engine.execute(
                "SELECT count(*) FROM (SELECT pg_sleep(3), (SELECT count(*) FROM high_value_tokens)) AS reading", [], writes: false)
            try await Self.wait(
                other, until: "SELECT count(*)::text FROM pg_locks WHERE relation = 'high_value_tokens'::regclass AND granted",
                answers: "1")
            do {
                _ = try await database.migrate()
                Issue.record("the migration waited for the reader instead of giving up")
            } catch {
                #expect("\(error)".contains("55P03") && "\(error)".contains("pg_stat_activity"), "\(error)")
            }
            #expect(try await other.schemaStatus().pending == pending)
            let added = try await other.engine.execute(
                "SELECT count(*)::text FROM information_schema.columns WHERE table_name = 'high_value_tokens'"
                    + " AND column_name = 'merchant_token_metadata'", [], writes: false)
            #expect(added.first?.first == .text("0"), "a migration given up on is rolled back whole")
            _ = try await reader
            #expect(try await database.migrate() == pending)
        }
    }

    /// The instance under test (statement timeout 300 ms) on a new, unmigrated database, and another
    /// instance on it whose statement timeout is long enough to hold locks.
    private static func withTwoInstances(
        _ body: (_ database: SQLDatabase<PostgresDriver>, _ other: SQLDatabase<PostgresDriver>) async throws -> Void
    ) async throws {
        let cluster = try TestPostgres.shared()
        try await cluster.withDatabase(migrated: false, statementTimeout: .milliseconds(300)) { database in
            var logger = Logger(label: "other-instance")
            logger.logLevel = .warning
            let name = try #require(database.engine.settings.database)
            let other = try PostgresDriver.make(cluster.settings(database: name, statementTimeout: .seconds(20)), logger: logger)
            let pool = Task { await other.engine.run() }
            defer { pool.cancel() }
            try await body(database, other)
        }
    }

    /// Runs `body` while `other` holds the migration lock, 1.5 s from when it took it: five times
    /// the statement timeout of the instance under test.
    private static func whileHoldingTheMigrationLock(_ other: SQLDatabase<PostgresDriver>, _ body: () async throws -> Void) async throws {
        async let holder = other.engine.execute(
            "SELECT count(*) FROM (SELECT pg_advisory_xact_lock(\(PostgresSchema.migrationLock)), pg_sleep(1.5)) AS held", [],
            writes: true)
        try await wait(other, until: advisoryLocks(granted: true), answers: "1")
        try await body()
        _ = try await holder
    }

    /// How many advisory locks are held (or waited for) in the database `other` is connected to:
    /// advisory locks are per database.
    private static func advisoryLocks(granted: Bool) -> String {
        """
        SELECT count(*)::text FROM pg_locks l JOIN pg_database d ON d.oid = l.database
        WHERE l.locktype = 'advisory' AND l.granted = \(granted) AND d.datname = current_database()
        """
    }

    /// Polls `sql`, which answers one text cell, until it answers `expected` (10 s at most).
    private static func wait(_ database: SQLDatabase<PostgresDriver>, until sql: String, answers expected: String) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while try await database.engine.execute(sql, [], writes: false).first?.first != .text(expected) {
            guard ContinuousClock.now < deadline else { throw PollTimedOut(sql: sql) }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    private struct PollTimedOut: Error, CustomStringConvertible {
        let sql: String
        var description: String { "no answer as expected within 10 s to: \(sql)" }
    }
}
