import Foundation
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenServer
import PaywardenStorage
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The replay ledger across instances, restarts, crashes and database outages, with real
/// `paywarden serve` processes, a real SoftHSM token, SQLite files and PostgreSQL.
@Suite(.releasesTestResources)
struct ReplayLedgerTests {
    @Test("two instances on one PostgreSQL refuse each other's replays; db migrate and db status see the same database")
    func twoInstancesShareTheLedger() async throws {
        let cluster = try TestPostgres.shared()
        let processes = try await ServeProcesses.make()
        let name = try cluster.database()
        var database = processes.postgres(cluster, database: name)
        database[SettingCatalog.databaseAutoMigrate.environmentName] = "false"
        // Auto-migration off: serve refuses an unmigrated database and says what to run.
        let refused = try processes.run(["serve"], database: database)
        #expect(refused.status == 3 && refused.stderr.contains("paywarden db migrate"), "\(refused.stderr)")
        let migrated = try processes.run(["db", "migrate"], database: database)
        #expect(migrated.status == 0 && migrated.stdout.contains("applied 0001_replay_ledger_and_vault"), "\(migrated.stderr)")

        let first = try await processes.start(database: database)
        let second = try await processes.start(database: database)
        let a = try processes.token()
        let b = try processes.token()
        #expect(try await first.decrypt(a).status == 200)
        #expect(try await second.decrypt(a).errorCode == "replayed_transaction")
        #expect(try await second.decrypt(b).status == 200)
        #expect(try await first.decrypt(b).errorCode == "replayed_transaction")

        let status = try processes.run(["db", "status", "--json"], database: database)
        let report = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(report?["driver"] as? String == "postgres")
        #expect((report?["tables"] as? [String: Int])?["replay_ledger"] == 2)
        #expect(report?["schemaVersion"] as? Int == Schema.migrations.count)
        #expect(report?["location"] as? String == cluster.url(database: name))
        first.stop()
        second.stop()
    }

    @Test("SQLite: a token decrypted before a restart is refused after it")
    func sqliteSurvivesRestart() async throws {
        let processes = try await ServeProcesses.make()
        let database = processes.sqlite(processes.admin.home + "/db/paywarden.sqlite")
        let token = try processes.token()
        let before = try await processes.start(database: database)
        #expect(try await before.decrypt(token).status == 200)
        before.stop()
        let after = try await processes.start(database: database)
        #expect(try await after.decrypt(token).errorCode == "replayed_transaction")
        after.stop()
    }

    @Test("kill -9 under load: every token answered 200 is in the ledger after the restart")
    func killUnderLoad() async throws {
        let processes = try await ServeProcesses.make()
        let database = processes.sqlite(processes.admin.home + "/db/paywarden.sqlite")
        let tokens = try (0..<400).map { _ in try processes.token() }
        let server = try await processes.start(database: database)
        let record = LoadRecord()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in stride(from: worker, to: tokens.count, by: 8) {
                        // After the kill a request would wait for its timeout: the client retries connecting.
                        if record.stop.load(ordering: .relaxed) { break }
                        record.sent.add(1, ordering: .relaxed)
                        // Answers cut off by the kill are not counted: only a 200 the client read.
                        if let reply = try? await server.decrypt(tokens[index]), reply.status == 200 {
                            record.answered.withLock { $0.append(index) }
                        }
                    }
                }
            }
            group.addTask {
                while record.sent.load(ordering: .relaxed) < tokens.count / 2 { try await Task.sleep(for: .milliseconds(5)) }
                server.kill(SIGKILL)
                record.stop.store(true, ordering: .relaxed)
            }
            try await group.waitForAll()
        }
        let ok = record.answered.withLock { $0 }
        #expect(ok.count > 0 && ok.count < tokens.count, "\(ok.count) of \(tokens.count) answered: the kill came too late or too early")
        let restarted = try await processes.start(database: database)
        for index in ok {
            let reply = try await restarted.decrypt(tokens[index])
            #expect(reply.errorCode == "replayed_transaction", "token \(index), answered 200 before the kill, was \(reply.status)")
        }
        restarted.stop()
    }

    @Test("PostgreSQL stopped under load: 503 database_unavailable and not ready, then recovery, never a 500")
    func postgresOutage() async throws {
        let cluster = try TestPostgres.shared()
        let name = try cluster.database()
        try await withServer({ configuration in
            configuration.database.location = .postgres(
                DatabaseSettings.PostgresLocation(
                    host: "127.0.0.1", port: cluster.port, username: cluster.username, password: Sensitive(cluster.password),
                    database: name, sslMode: .disable, displayURL: cluster.url(database: name)))
            configuration.database.autoMigrate = true
            configuration.database.statementTimeout = .milliseconds(500)
        }) { server in
            let record = LoadRecord()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        while !record.stop.load(ordering: .relaxed) {
                            let reply = try await server.send(body: try server.ecToken())
                            record.statuses.withLock { $0[reply.status, default: 0] += 1 }
                            if let code = reply.errorCode { _ = record.codes.withLock { $0.insert(code) } }
                        }
                    }
                }
                group.addTask {
                    defer { record.stop.store(true, ordering: .relaxed) }
                    try await Task.sleep(for: .milliseconds(500))
                    try cluster.stop()
                    do {
                        try await Self.waitFor(server, readiness: 503)
                        let down = try await server.send(.GET, "/readyz", apiKey: .some(nil))
                        #expect(down.text.contains("database_unavailable"))
                        let refused = try await server.send(body: try server.ecToken())
                        #expect(
                            refused.status == 503 && refused.errorCode == "database_unavailable" && refused.header("Retry-After") != nil)
                        _ = DecryptEndpointTests.observed.withLock { $0.insert("\(refused.status) \(refused.errorCode ?? "")") }
                    } catch {
                        // The cluster is shared: left stopped, it would fail every later suite too.
                        try? cluster.start()
                        throw error
                    }
                    try cluster.start()
                    try await Self.waitFor(server, readiness: 200)
                    #expect(try await server.send(body: try server.ecToken()).status == 200, "no recovery")
                }
                try await group.waitForAll()
            }
            let seen = record.statuses.withLock { $0 }
            #expect(Set(seen.keys).isSubset(of: [200, 503]), "statuses: \(seen), codes: \(record.codes.withLock { $0 })")
            #expect(seen[200, default: 0] > 0 && seen[503, default: 0] > 0, "statuses: \(seen)")
            #expect(record.codes.withLock { $0 } == ["database_unavailable"])
        }
    }

    /// What concurrent senders record.
    private final class LoadRecord: Sendable {
        let answered = Mutex<[Int]>([])
        let sent = Atomic<Int>(0)
        let statuses = Mutex<[Int: Int]>([:])
        let codes = Mutex<Set<String>>([])
        let stop = Atomic<Bool>(false)
    }

    private static func waitFor(_ server: TestServer, readiness status: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if try await server.send(.GET, "/readyz", apiKey: .some(nil)).status == status { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("/readyz did not answer \(status) within 30 s")
    }
}
