import Foundation
import Logging
import PaywardenConfiguration
import PaywardenDatabase
import PaywardenServices
import PaywardenStorage
import PaywardenStoragePostgres
import PaywardenStorageSQL
import PaywardenStorageSQLite
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// `paywarden db copy` and `db compare`, run as an operator runs them, between real SQLite files
/// and databases on the test PostgreSQL cluster.
@Suite(.releasesTestResources)
struct DatabaseCopyTests {
    enum Backend: String, CustomTestStringConvertible {
        case sqlite
        case postgres

        var testDescription: String { rawValue }
    }

    /// A database as the test reads it, and as the command names it.
    struct TestDatabase {
        let engine: any SQLDriver
        let url: String
        /// The configured database's settings, for a command run on it.
        let environment: [String: String]
    }

    @Test(
        "db copy: every table and every row, from each engine to each",
        arguments: [(Backend.sqlite, Backend.sqlite), (.sqlite, .postgres), (.postgres, .sqlite), (.postgres, .postgres)])
    func copiesEveryTable(from: Backend, to: Backend) async throws {
        try await withDatabase(from, migrated: true) { source in
            try await EveryTableRows.fill(source.engine)
            // Every table the migrations create is one the copy knows: a table left out of the
            // list fails here, and its rows (filled from the declarations) fail below.
            #expect(try await source.engine.tableNames() == Set(Schema.tables))
            try await withDatabase(to, migrated: false) { target in
                let copied = try paywarden(["db", "copy", "--to", target.url], on: source)
                #expect(copied.status == 0, "\(copied.stderr)")
                for table in Schema.tables {
                    #expect(copied.stdout.split(separator: "\n").contains { $0.hasPrefix(table + " ") && $0.hasSuffix("same") }, "\(table)")
                }
                // Read back without the command's digests: the same rows, value for value.
                for table in try await source.engine.tableNames() {
                    let sourceRows = try await rows(table, of: source.engine)
                    let targetRows = try await rows(table, of: target.engine)
                    #expect(!sourceRows.isEmpty && sourceRows == targetRows, "\(table)")
                }
            }
        }
    }

    @Test("db copy refuses a target holding a row, naming its table, and writes nothing")
    func refusesNonEmptyTarget() async throws {
        try await withDatabase(.sqlite, migrated: true) { source in
            try await EveryTableRows.fill(source.engine, largeRows: 3)
            try await withDatabase(.postgres, migrated: true) { target in
                _ = try await target.engine.execute(
                    "INSERT INTO web_merchant_domain_challenges (organization, challenge, created_at) VALUES ('org', 'c', 1)", [],
                    writes: true)
                let refused = try paywarden(["db", "copy", "--to", target.url], on: source)
                #expect(refused.status == 1)
                #expect(refused.stderr.contains("web_merchant_domain_challenges holds 1 row"), "\(refused.stderr)")
                #expect(try await rows("replay_ledger", of: target.engine).isEmpty)
            }
            // A database of something else: refused before anything is created in it.
            try await withDatabase(.postgres, migrated: false) { target in
                _ = try await target.engine.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY)", [], writes: true)
                _ = try await target.engine.execute("INSERT INTO orders (id) VALUES (1)", [], writes: true)
                let refused = try paywarden(["db", "copy", "--to", target.url], on: source)
                #expect(refused.status == 1 && refused.stderr.contains("orders holds 1 row"), "\(refused.stderr)")
                #expect(try await target.engine.tableNames() == ["orders"])
            }
        }
    }

    @Test("db compare reports a row changed at the target after the copy, and exits 1")
    func compareFindsAChangedRow() async throws {
        try await withDatabase(.sqlite, migrated: true) { source in
            try await EveryTableRows.fill(source.engine, largeRows: 3)
            try await withDatabase(.postgres, migrated: false) { target in
                #expect(try paywarden(["db", "copy", "--to", target.url], on: source).status == 0)
                let same = try paywarden(["db", "compare", "--to", target.url], on: source)
                #expect(same.status == 0, "\(same.stderr)")
                _ = try await target.engine.execute(
                    "UPDATE paypages SET organization = 'another' WHERE id = (SELECT min(id) FROM paypages)", [], writes: true)
                let compared = try paywarden(["db", "compare", "--to", target.url], on: source)
                #expect(compared.status == 1)
                let lines = compared.stdout.split(separator: "\n")
                #expect(lines.contains { $0.hasPrefix("paypages ") && $0.hasSuffix("DIFFERENT") }, "\(compared.stdout)")
                #expect(lines.filter { $0.hasSuffix("DIFFERENT") }.count == 1, "\(compared.stdout)")
                #expect(compared.stderr.contains("paypages differ"), "\(compared.stderr)")
            }
        }
    }

    @Test("db copy refuses a URL with a password, and never prints it")
    func refusesPasswordInURL() async throws {
        try await withDatabase(.sqlite, migrated: true) { source in
            let cluster = try TestPostgres.shared()
            let url = "postgres://\(cluster.username):secret@127.0.0.1:\(cluster.port)/x?sslmode=disable"
            let refused = try paywarden(["db", "copy", "--to", url], on: source)
            #expect(refused.status == 3 && refused.stderr.contains("--to carries a password"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("secret") && !refused.stdout.contains("secret"))
        }
    }

    /// After the move the old token is refused, the registration redeems and its high-value token detokenizes.
    @Test("a running serve is detected on SQLite and PostgreSQL; stopped, its database is copied and nothing is lost")
    func runningServeAndTheMove() async throws {
        let cluster = try TestPostgres.shared()
        let processes = try await ServeProcesses.make()
        let path = processes.admin.home + "/db/paywarden.sqlite"
        let sqlite = processes.sqlite(path)
        let name = try cluster.database()
        let postgres = processes.postgres(cluster, database: name)
        let passwordFile = [SettingCatalog.databasePasswordFile.environmentName: cluster.passwordFile]
        let token = try processes.token()

        try processes.createPaypage("Move1", database: sqlite)
        let onSQLite = try await processes.start(database: sqlite)
        #expect(try await onSQLite.decrypt(token).status == 200)
        guard case .registered(let registration) = await processes.post(try processes.token(), to: onSQLite.port, registeringWith: "Move1")
        else {
            Issue.record("registration refused")
            return
        }
        let redeemed = try await processes.redeem(registration, at: onSQLite.port)
        let highValueToken = try #require(Self.highValueToken(redeemed), "\(redeemed.text)")
        let whileServing = try processes.run(
            ["db", "copy", "--to", cluster.url(database: name)], database: sqlite.merging(passwordFile) { $1 })
        #expect(whileServing.status == 1, "\(whileServing.stderr)")
        #expect(
            whileServing.stderr.contains("running `paywarden serve`") && whileServing.stderr.contains(".serving"), "\(whileServing.stderr)")
        onSQLite.stop()

        let copied = try processes.run(["db", "copy", "--to", cluster.url(database: name)], database: sqlite.merging(passwordFile) { $1 })
        #expect(copied.status == 0, "\(copied.stderr)")
        let onPostgres = try await processes.start(database: postgres, recordingKeys: false)
        #expect(try await onPostgres.decrypt(token).errorCode == "replayed_transaction")
        #expect(try await onPostgres.decrypt(try processes.token()).status == 200)
        let redeemedAgain = try await processes.redeem(registration, at: onPostgres.port)
        #expect(redeemedAgain.status == 200 && Self.highValueToken(redeemedAgain) == highValueToken, "\(redeemedAgain.text)")
        let detokenized = try await processes.detokenize(highValueToken, at: onPostgres.port)
        #expect(detokenized.status == 200 && detokenized.text.contains("accountNumber"), "\(detokenized.status)")
        let fromServed = try processes.run(["db", "copy", "--to", "sqlite:" + processes.admin.home + "/again.sqlite"], database: postgres)
        #expect(fromServed.status == 1, "\(fromServed.stderr)")
        #expect(
            fromServed.stderr.contains("running `paywarden serve`") && fromServed.stderr.contains("pg_stat_activity"),
            "\(fromServed.stderr)")
        onPostgres.stop()
    }

    /// The high-value token of a redemption's answer.
    private static func highValueToken(_ reply: TestServer.Reply) -> String? {
        let body = try? JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]
        return (body?["highValueToken"] as? [String: Any])?["token"] as? String
    }

    @Test("while db copy reads a SQLite database, serve is refused it (and a second copy too); once it ends, serve opens it")
    func serveWaitsForTheCopy() async throws {
        let directory = NSTemporaryDirectory() + "paywarden-copy-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: directory)
        let path = directory + "/paywarden.sqlite"
        _ = try SQLiteDriver.open(path: path)
        let settings = try await PaywardenSettings.load(environment: [
            SettingCatalog.home.environmentName: directory, SettingCatalog.databaseURL.environmentName: "sqlite:" + path,
        ]).database
        var copying = try SQLiteServingLock.take(.copying, databasePath: path)
        #expect(copying != nil)
        #expect(try SQLiteServingLock.take(.copying, databasePath: path) == nil)
        let refused = #expect(throws: StorageError.self) {
            try DatabaseConnection.open(settings, serving: true, logger: Logger(label: "database-copy-tests"))
        }
        #expect(refused?.description.contains("`paywarden db copy` is reading the database") == true, "\(String(describing: refused))")
        copying = nil
        let serving = try DatabaseConnection.open(settings, serving: true, logger: Logger(label: "database-copy-tests"))
        #expect(try SQLiteServingLock.take(.copying, databasePath: path) == nil)
        withExtendedLifetime(serving) {}
    }

    // MARK: Helpers

    /// Runs `paywarden ARGUMENTS` with `database` configured and nothing else of this process's settings.
    private func paywarden(_ arguments: [String], on database: TestDatabase) throws -> PaywardenProcess.Output {
        let home = NSTemporaryDirectory() + "paywarden-copy-home-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        TestResources.track(directory: home)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PAYWARDEN_") }
        environment[SettingCatalog.home.environmentName] = home
        environment.merge(database.environment) { $1 }
        environment[SettingCatalog.databasePasswordFile.environmentName] = try TestPostgres.shared().passwordFile
        return try PaywardenProcess(environment: environment).run(arguments)
    }

    /// Every row of `table`, its columns in name order.
    private func rows(_ table: String, of engine: any SQLDriver) async throws -> Set<[SQLValue]> {
        let columns = try await engine.layout(of: table).canonicalColumns.map(\.name)
        return Set(try await engine.execute("SELECT \(columns.joined(separator: ", ")) FROM \(table)", [], writes: false))
    }

    private func withDatabase(_ backend: Backend, migrated: Bool, _ body: (TestDatabase) async throws -> Void) async throws {
        switch backend {
        case .sqlite:
            let directory = NSTemporaryDirectory() + "paywarden-copy-\(UUID().uuidString.prefix(8))"
            TestResources.track(directory: directory)
            let path = directory + "/paywarden.sqlite"
            let database = try SQLiteDriver.open(path: path)
            if migrated { _ = try await database.migrate() }
            try await body(
                TestDatabase(
                    engine: database.engine, url: "sqlite:" + path,
                    environment: [SettingCatalog.databaseURL.environmentName: "sqlite:" + path]))
        case .postgres:
            let cluster = try TestPostgres.shared()
            let name = try cluster.database()
            var logger = Logger(label: "database-copy-tests")
            logger.logLevel = .warning
            let database = try PostgresDriver.make(cluster.settings(database: name), logger: logger)
            let pool = Task { await database.engine.run() }
            defer { pool.cancel() }
            if migrated { _ = try await database.migrate() }
            try await body(
                TestDatabase(
                    engine: database.engine, url: cluster.url(database: name),
                    environment: [SettingCatalog.databaseURL.environmentName: cluster.url(database: name)]))
        }
    }
}
