import Foundation
import PaywardenConfiguration
import PaywardenStorage
import PaywardenStorageSQLite
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

/// `paywarden db backup` of a SQLite database while a real `serve` decrypts under load, and the
/// restore the command's help describes: the file put in place of a fresh database.
@Suite(.releasesTestResources)
struct DatabaseBackupTests {
    /// The key decrypts, every old token is refused, every old registration redeems.
    @Test("backed up while serving under load, restored in place of a fresh database: nothing from before the backup is lost")
    func backupWhileServing() async throws {
        let processes = try await ServeProcesses.make()
        let database = processes.sqlite(processes.admin.home + "/db/paywarden.sqlite")
        try processes.createPaypage("Backup1", database: database)
        let server = try await processes.start(database: database)
        // Even positions decrypted, odd ones registered.
        let before = try (0..<20).map { _ in try processes.token() }
        var registrations: [String] = []
        for (index, token) in before.enumerated() {
            switch await processes.post(token, to: server.port, registeringWith: index % 2 == 0 ? nil : "Backup1") {
            case .registered(let id): registrations.append(id)
            case .decrypted: break
            case nil: Issue.record("token \(index) not answered 200")
            }
        }
        #expect(registrations.count == before.count / 2)

        let during = try (0..<300).map { _ in try processes.token() }
        let answered = Atomic<Int>(0)
        let load = Task {
            for token in during where (try? await server.decrypt(token))?.status == 200 { answered.add(1, ordering: .relaxed) }
        }
        let backup = processes.admin.home + "/backup.sqlite"
        let backedUp = try processes.run(["db", "backup", backup], database: database)
        await load.value
        #expect(backedUp.status == 0, "\(backedUp.stderr)")
        #expect(answered.load(ordering: .relaxed) == during.count, "every request during the backup was answered")
        let mode = try FileManager.default.attributesOfItem(atPath: backup)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = try processes.run(["db", "backup", backup], database: database)
        #expect(again.status == 1 && again.stderr.contains("exists"), "\(again.stderr)")
        server.stop()

        // The restore: the file in place of the database of a fresh directory, serve started on it.
        let restoredPath = processes.admin.home + "/restored/paywarden.sqlite"
        try FileManager.default.createDirectory(atPath: processes.admin.home + "/restored", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: backup, toPath: restoredPath)
        let ledger = try await SQLiteDriver.open(path: restoredPath, create: false).rowCounts().first { $0.table == "replay_ledger" }?.rows
        // A snapshot: every claim made before the backup began, and none made after the load ended.
        #expect((before.count...(before.count + during.count)).contains(ledger ?? -1), "\(String(describing: ledger))")
        let restored = try await processes.start(database: processes.sqlite(restoredPath), recordingKeys: false)
        for token in before { #expect(try await restored.decrypt(token).errorCode == "replayed_transaction") }
        for id in registrations {
            let redeemed = try await processes.redeem(id, at: restored.port)
            #expect(redeemed.status == 200, "\(redeemed.text)")
        }
        #expect(try await restored.decrypt(try processes.token()).status == 200)
        restored.stop()
    }

    @Test("db backup refuses a PostgreSQL database and says what to use")
    func refusesPostgres() async throws {
        let cluster = try TestPostgres.shared()
        let home = NSTemporaryDirectory() + "paywarden-backup-home-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        TestResources.track(directory: home)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PAYWARDEN_") }
        environment[SettingCatalog.home.environmentName] = home
        environment[SettingCatalog.databaseURL.environmentName] = cluster.url(database: try cluster.database())
        environment[SettingCatalog.databasePasswordFile.environmentName] = cluster.passwordFile
        let refused = try PaywardenProcess(environment: environment).run(["db", "backup", home + "/x.sqlite"])
        #expect(refused.status == 3 && refused.stderr.contains("pg_dump"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: home + "/x.sqlite"))
    }
}
