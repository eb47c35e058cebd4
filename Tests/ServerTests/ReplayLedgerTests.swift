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

    /// After the restart every token answered 200 is a replay, every registration answered
    /// redeems, and no token is answered 200 twice.
    @Test("kill -9 under decrypts and registrations: nothing acknowledged is lost", arguments: ["sqlite", "postgres"])
    func killUnderLoad(backend: String) async throws {
        let processes = try await ServeProcesses.make()
        let database =
            backend == "sqlite"
            ? processes.sqlite(processes.admin.home + "/db/paywarden.sqlite")
            : processes.postgres(try TestPostgres.shared(), database: try TestPostgres.shared().database())
        try processes.createPaypage("Crash1", database: database)
        // Even positions are decrypted, odd ones registered with the paypage.
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
                        switch await processes.post(tokens[index], to: server.port, registeringWith: index % 2 == 0 ? nil : "Crash1") {
                        case .decrypted: record.answered.withLock { $0.append(index) }
                        case .registered(let id): record.registered.withLock { $0[index] = id }
                        case nil: break
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
        let decrypted = record.answered.withLock { $0 }
        let registered = record.registered.withLock { $0 }
        #expect(decrypted.count > 0 && registered.count > 0, "\(decrypted.count) decrypted, \(registered.count) registered")
        #expect(decrypted.count + registered.count < tokens.count / 2 + 8, "the kill came too late")
        let restarted = try await processes.start(database: database)
        for (index, id) in registered {
            let redeemed = try await processes.redeem(id, at: restarted.port)
            #expect(redeemed.status == 200, "registration of token \(index), answered before the kill: \(redeemed.text)")
        }
        // Every token once more, as a decrypt: one answered 200 before (decrypted or registered)
        // is a replay; one whose answer the kill cut off may be either, but only once.
        var answeredAfter = 0
        for index in tokens.indices {
            let reply = try await restarted.decrypt(tokens[index])
            if decrypted.contains(index) || registered[index] != nil {
                #expect(reply.errorCode == "replayed_transaction", "token \(index), answered 200 before the kill, was \(reply.status)")
            } else if reply.status == 200 {
                answeredAfter += 1
                #expect(try await restarted.decrypt(tokens[index]).errorCode == "replayed_transaction", "token \(index) twice")
            } else {
                #expect(reply.errorCode == "replayed_transaction", "token \(index): \(reply.status) \(reply.text)")
            }
        }
        print(
            "kill -9 (\(backend)): \(decrypted.count) decrypts and \(registered.count) registrations answered before the kill, "
                + "all refused as replays (and the registrations redeemed) after it; \(answeredAfter) of the rest decrypted once after")
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
        let registered = Mutex<[Int: String]>([:])
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
