import Foundation
import PaywardenStorage
import PaywardenStorageSQL
import PaywardenStorageSQLite
import PaywardenTestTraits
import PaywardenTesting
import Testing

@Suite(.releasesTestResources)
struct SQLiteDriverTests {
    private func temporaryPath() -> String {
        let directory = NSTemporaryDirectory() + "paywarden-sqlite-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: directory)
        return directory + "/nested/paywarden.sqlite"
    }

    @Test("the file is created owner-only, in WAL mode, and survives reopening")
    func fileModeAndDurability() async throws {
        let path = temporaryPath()
        do {
            let database = try SQLiteDriver.open(path: path)
            #expect(try await database.migrate() == Schema.migrations)
            #expect(try await database.claimTransaction([1, 2, 3], until: Date() + 300, now: Date()))
            let mode = try await database.engine.execute("PRAGMA journal_mode", [], writes: false)
            #expect(mode == [[.text("wal")]])
            // While the pool is open the write-ahead log and shared memory exist, owner-only too.
            for file in [path, path + "-wal", path + "-shm"] {
                let attributes = try FileManager.default.attributesOfItem(atPath: file)
                #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(file)")
            }
        }
        let directory = (path as NSString).deletingLastPathComponent
        #expect((try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int) == 0o700)
        let reopened = try SQLiteDriver.open(path: path)
        #expect(try await reopened.schemaStatus().isCurrent)
        #expect(try await !reopened.claimTransaction([1, 2, 3], until: Date() + 300, now: Date()), "the claim was lost")
    }

    /// Writes that arrive together are committed together (SQLiteWriter), each answered as if it
    /// ran alone: a write refused by a constraint undoes nothing of the others in its batch.
    @Test("concurrent writes are group-committed, each answered as if alone")
    func concurrentWritesAreAnsweredAsIfAlone() async throws {
        let database = try SQLiteDriver.open(path: temporaryPath())
        _ = try await database.migrate()
        let ids = (0..<100).map { "groupcommit\($0)" }
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for id in ids + ids {
                group.addTask {
                    let record = PaypageRecord(
                        id: id, organization: "org", merchantIdentifiers: ["merchant.com.example"], reportGroups: [],
                        tokenFormat: "T", createdAt: Date())
                    do {
                        try await database.createPaypage(record)
                        return true
                    } catch {
                        #expect((error as? StorageError)?.category == .conflict, "\(error)")
                        return false
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == ids.count, "each id created once, its twin refused")
        #expect(Set(try await database.paypages().map(\.id)) == Set(ids))
        // The claims, each a statement in a shared transaction, stay exact too.
        let claims = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<200 {
                group.addTask { (try? await database.claimTransaction([UInt8(index % 100), 7], until: Date() + 60, now: Date())) ?? false }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(claims == 100)
    }

    @Test("a file that is not a database is refused as corrupt, naming it")
    func notADatabase() throws {
        let path = temporaryPath()
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try SQLiteDriver.open(path: path)
        } throws: { error in
            let error = error as? StorageError
            return error?.category == .corrupt && error?.message.contains(path) == true
        }
    }

    @Test("status commands do not create a database")
    func notCreated() {
        let path = temporaryPath()
        #expect(throws: StorageError.self) { _ = try SQLiteDriver.open(path: path, create: false) }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("two processes' worth of concurrent migrations apply each migration once")
    func concurrentMigrations() async throws {
        let path = temporaryPath()
        let first = try SQLiteDriver.open(path: path)
        let second = try SQLiteDriver.open(path: path)
        async let a = first.migrate()
        async let b = second.migrate()
        let applied = try await [a, b]
        #expect(applied.flatMap { $0 } == Schema.migrations)
    }

    @Test("an unmigrated database reports every migration pending")
    func unmigrated() async throws {
        let database = try SQLiteDriver.open(path: temporaryPath())
        let status = try await database.schemaStatus()
        #expect(status.version == 0 && status.pending == Schema.migrations && !status.isNewerThanBuild)
        #expect(try await database.rowCounts().isEmpty)
    }

    @Test("a database migrated by a newer build is refused, and migrate does not touch it")
    func newerSchema() async throws {
        let database = try SQLiteDriver.open(path: temporaryPath())
        _ = try await database.migrate()
        _ = try await database.engine.execute("INSERT INTO grdb_migrations (identifier) VALUES ('9999_future')", [], writes: true)
        let status = try await database.schemaStatus()
        #expect(status.isNewerThanBuild && status.unknown == ["9999_future"])
        await #expect(throws: StorageError.self) { _ = try await database.migrate() }
    }

    @Test("a row this build cannot read is a corrupt error naming the table, the row and the column")
    func corruptRow() async throws {
        let database = try SQLiteDriver.open(path: temporaryPath())
        _ = try await database.migrate()
        try await StorageFaults.plantUnreadableToken(in: database)
    }
}

/// Damage only a test would do, on any SQL driver.
enum StorageFaults {
    static func plantUnreadableToken<Driver: SQLDriver>(in database: SQLDatabase<Driver>) async throws {
        let record = TokenRecord(
            organization: "org-a", token: "4111110000001112", fingerprint: Array(repeating: 0xAB, count: 32), fingerprintKeyID: "hmac-1",
            accountKind: .devicePAN, merchantTokenID: nil,
            sealed: SealedPayload(keyID: "k", wrapPath: "aes-key-wrap-pad", wrappedKey: [1], ciphertext: [2], version: 1),
            createdAt: Date(timeIntervalSince1970: 1_795_000_000))
        _ = try await database.insertToken(record)
        _ = try await database.engine.execute("UPDATE high_value_tokens SET account_kind = 'card'", [], writes: true)
        do {
            _ = try await database.token("4111110000001112", organization: "org-a")
            Issue.record("an unreadable row was read")
        } catch {
            #expect(error.category == .corrupt)
            #expect(error.table == "high_value_tokens")
            #expect(error.row == "organization org-a, fingerprint abababababababab…")
            #expect(error.message.contains("account_kind") && error.message.contains("card"))
            #expect(!error.description.contains("4111110000001112"), "the token value is in the error")
        }
    }
}
