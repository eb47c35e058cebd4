import Foundation
import Logging
import PaywardenPrimitives
import PaywardenStorage
import PaywardenStoragePostgres
import PaywardenStorageSQL
import PaywardenTestTraits
import PaywardenTesting
import Testing

@Suite(.releasesTestResources)
struct PostgresDriverTests {
    @Test("an unmigrated database reports every migration pending; migrating applies them once")
    func migrations() async throws {
        try await TestPostgres.shared().withDatabase(migrated: false) { database in
            let before = try await database.schemaStatus()
            #expect(before.version == 0 && before.pending == Schema.migrations)
            // Two instances starting at once: the advisory lock lets one migrate, the other finds nothing to do.
            async let first = database.migrate()
            async let second = database.migrate()
            let applied = try await [first, second]
            #expect(applied.flatMap { $0 } == Schema.migrations)
            #expect(try await database.schemaStatus().isCurrent)
        }
    }

    @Test("a database migrated by a newer build is refused")
    func newerSchema() async throws {
        try await TestPostgres.shared().withDatabase { database in
            _ = try await database.engine.execute(
                "INSERT INTO paywarden_migrations (identifier, applied_at) VALUES ('9999_future', 0)", [], writes: true)
            #expect(try await database.schemaStatus().unknown == ["9999_future"])
            await #expect(throws: StorageError.self) { _ = try await database.migrate() }
        }
    }

    @Test("a row this build cannot read is a corrupt error naming the table, the row and the column")
    func corruptRow() async throws {
        try await TestPostgres.shared().withDatabase { database in try await StorageFaults.plantUnreadableToken(in: database) }
    }

    @Test("a server nobody answers for is unavailable within the statement timeout, not after the pool's minute")
    func unreachable() async throws {
        let postgres = try TestPostgres.shared()
        var settings = postgres.settings(database: "postgres", statementTimeout: .milliseconds(500))
        settings.port = try TestPostgres.freePort()
        let database = try PostgresDriver.make(settings, logger: Logger(label: "test"))
        let pool = Task { await database.engine.run() }
        defer { pool.cancel() }
        let start = ContinuousClock.now
        do {
            _ = try await database.claimTransaction([1], until: Date() + 60, now: Date())
            Issue.record("a claim succeeded without a server")
        } catch {
            #expect(error.category == .unavailable)
        }
        #expect(ContinuousClock.now - start < .seconds(3))
    }

    @Test("a wrong password is unavailable, and the password appears nowhere in the error")
    func wrongPassword() async throws {
        let postgres = try TestPostgres.shared()
        var settings = postgres.settings(database: "postgres", statementTimeout: .milliseconds(700))
        settings.password = Sensitive("not-the-password-\(UUID().uuidString)")
        let database = try PostgresDriver.make(settings, logger: Logger(label: "test"))
        let pool = Task { await database.engine.run() }
        defer { pool.cancel() }
        do {
            try await database.checkConnection()
            Issue.record("connected with a wrong password")
        } catch {
            #expect(error.category == .unavailable)
            #expect(!error.description.contains(postgres.password) && !error.description.contains("not-the-password"))
        }
    }
}
