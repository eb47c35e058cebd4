import Foundation
import PaywardenConfiguration
import PaywardenServer
import PaywardenStorageSQLite
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The key records live in the database. When they cannot be read, the HSM has not failed: the
/// key map keeps what it had (tokens still decrypt), no module recycle is tried, and the next
/// refresh that reads them loads them again.
@Suite(.serialized, .releasesTestResources)
struct KeyRecordOutageTests {
    @Test func unreadableKeyRecordsKeepTheKeyMapAndAreNotAnHSMFault() async throws {
        try await withServer { server in
            guard case .sqlite(let path) = server.server.configuration.database.location else {
                Issue.record("the test server's database is SQLite")
                return
            }
            let database = try SQLiteDriver.open(path: path, create: false)
            #expect(try await server.send(body: try server.ecToken()).status == 200)
            let recycles = server.server.hsm.recycles
            _ = try await database.engine.execute("ALTER TABLE merchant_keys RENAME TO merchant_keys_away", [], writes: true)
            // Refreshes run every 250 ms here: wait for one to meet the missing table.
            let deadline = ContinuousClock.now + .seconds(10)
            while !server.logs.text.contains("the key records could not be read"), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(server.logs.text.contains("the key records could not be read"))
            #expect(try await server.operations("/readyz").status == 200, "a key map was loaded: the service stays ready")
            #expect(try await server.send(body: try server.ecToken()).status == 200, "the kept key map still decrypts")
            #expect(server.server.hsm.recycles == recycles, "a database failure is not answered with an HSM recycle")
            _ = try await database.engine.execute("ALTER TABLE merchant_keys_away RENAME TO merchant_keys", [], writes: true)
            try await Task.sleep(for: .milliseconds(600))
            #expect(try await server.send(body: try server.ecToken()).status == 200)
        }
    }
}
