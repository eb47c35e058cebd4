import Foundation
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

/// The PostgreSQL backup an operator takes (docs/operations.md, "Backups"): `pg_dump` while an
/// instance serves decrypts and registrations, `pg_restore` into a new database, and an instance
/// on it finds what the backup held: the keys work, the registrations redeem, the replays are refused.
@Suite(.releasesTestResources)
struct PostgresBackupTests {
    @Test("pg_dump while serving, pg_restore into a new database: keys, registrations and the ledger come back")
    func backUpWhileServingAndRestore() async throws {
        let cluster = try TestPostgres.shared()
        let processes = try await ServeProcesses.make()
        let source = processes.postgres(cluster, database: try cluster.database())
        try processes.createPaypage("Backup1", database: source)
        let server = try await processes.start(database: source)
        let tokens = try (0..<240).map { _ in try processes.token() }
        let record = Record()
        let file = processes.admin.home + "/paywarden.dump"
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for index in stride(from: worker, to: tokens.count, by: 4) {
                        let paypage = index % 2 == 0 ? nil : "Backup1"
                        guard let answer = await processes.post(tokens[index], to: server.port, registeringWith: paypage) else {
                            Issue.record("token \(index) not answered 200")
                            continue
                        }
                        record.acknowledged.withLock { $0[index] = answer }
                    }
                }
            }
            group.addTask {
                while record.acknowledged.withLock({ $0.count }) < tokens.count / 3 { try await Task.sleep(for: .milliseconds(5)) }
                // What was answered before pg_dump began is in its snapshot; what comes after may not be.
                let answered = record.acknowledged.withLock { $0 }
                record.beforeBackup.withLock { $0 = answered }
                try cluster.backUp(database: try Self.name(source), to: file)
            }
            try await group.waitForAll()
        }
        server.stop()

        let target = processes.postgres(cluster, database: try cluster.database())
        try cluster.restore(file, into: try Self.name(target))
        let restored = try await processes.start(database: target, recordingKeys: false)
        let before = record.beforeBackup.withLock { $0 }
        var registrations = 0
        for (index, answer) in before {
            switch answer {
            case .decrypted:
                #expect(try await restored.decrypt(tokens[index]).errorCode == "replayed_transaction", "token \(index)")
            case .registered(let id):
                registrations += 1
                let redeemed = try await processes.redeem(id, at: restored.port)
                #expect(redeemed.status == 200, "registration of token \(index): \(redeemed.text)")
                #expect(try await restored.decrypt(tokens[index]).errorCode == "replayed_transaction", "token \(index)")
            }
        }
        #expect(registrations > 0 && before.count > registrations)
        // The merchant key's record came back with the rest: a new token decrypts.
        #expect(try await restored.decrypt(try processes.token()).status == 200)
        restored.stop()
    }

    private final class Record: Sendable {
        let acknowledged = Mutex<[Int: ServeProcesses.Acknowledged]>([:])
        let beforeBackup = Mutex<[Int: ServeProcesses.Acknowledged]>([:])
    }

    /// The database name in a ``ServeProcesses/postgres(_:database:)`` environment's URL.
    private static func name(_ environment: [String: String]) throws -> String {
        let url = try #require(environment.values.first { $0.hasPrefix("postgres://") }.flatMap(URLComponents.init(string:)))
        return String(url.path.dropFirst())
    }
}
