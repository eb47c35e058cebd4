import Foundation
import PaywardenConfiguration
import PaywardenTestTraits
import PaywardenTesting
import Testing

@Suite(.releasesTestResources)
struct DatabaseSettingsTests {
    private func load(_ environment: [String: String]) async throws(ConfigurationError) -> DatabaseSettings {
        try await PaywardenSettings.load(environment: environment).database
    }

    private func passwordFile(_ password: String) throws -> String {
        let directory = NSTemporaryDirectory() + "paywarden-dbconfig-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TestResources.track(directory: directory)
        try OwnerOnlyFile.write(password + "\n", to: directory + "/password")
        return directory + "/password"
    }

    @Test("SQLite under the home by default, migrated automatically; sqlite: and memory: URLs")
    func defaults() async throws {
        let settings = try await load(["PAYWARDEN_HOME": "/var/lib/paywarden"])
        guard case .sqlite(let path) = settings.location else {
            Issue.record("not SQLite: \(settings.location)")
            return
        }
        #expect(path == "/var/lib/paywarden/paywarden.sqlite")
        #expect(settings.autoMigrate && settings.poolSize == 10 && settings.statementTimeout == .milliseconds(2000))
        guard case .sqlite(let explicit) = try await load(["PAYWARDEN_DATABASE_URL": "sqlite:///srv/db/p.sqlite"]).location else {
            Issue.record("sqlite:// not read")
            return
        }
        #expect(explicit == "/srv/db/p.sqlite")
        guard case .memory = try await load(["PAYWARDEN_DATABASE_URL": "memory:"]).location else {
            Issue.record("memory:")
            return
        }
    }

    @Test("a PostgreSQL URL: verify-full unless it says otherwise, the password from a file, not migrated automatically")
    func postgres() async throws {
        let file = try passwordFile("s3cr:et")
        let settings = try await load([
            "PAYWARDEN_DATABASE_URL": "postgres://pay%40warden@db.example:6432/vault", "PAYWARDEN_DATABASE_PASSWORD_FILE": file,
            "PAYWARDEN_DATABASE_POOL_SIZE": "4",
        ])
        guard case .postgres(let location) = settings.location else {
            Issue.record("not PostgreSQL")
            return
        }
        #expect(location.host == "db.example" && location.port == 6432 && location.username == "pay@warden")
        #expect(location.database == "vault" && location.sslMode == .verifyFull && location.password?.revealed == "s3cr:et")
        #expect(!settings.autoMigrate && settings.poolSize == 4)
        let inline = try await load(["PAYWARDEN_DATABASE_URL": "postgresql://u:p%2Fw@10.0.0.5/db?sslmode=verify-ca"])
        guard case .postgres(let second) = inline.location else {
            Issue.record("not PostgreSQL")
            return
        }
        #expect(second.password?.revealed == "p/w" && second.sslMode == .verifyCA && second.port == 5432)
        #expect(second.displayURL == "postgresql://u:<redacted>@10.0.0.5/db?sslmode=verify-ca")
        let shown = try await PaywardenSettings.load(environment: ["PAYWARDEN_DATABASE_URL": "postgresql://u:p%2Fw@10.0.0.5/db"])
        #expect(shown.effective.first { $0.setting.key == "database_url" }?.displayValue == "postgresql://u:<redacted>@10.0.0.5/db")
    }

    @Test("a password in the configuration file's URL is refused: the file holds no secrets")
    func passwordInFile() async throws {
        let directory = NSTemporaryDirectory() + "paywarden-dbconfig-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TestResources.track(directory: directory)
        try #"{"paywarden": {"database_url": "postgres://u:hunter2@db/x"}}"#.write(
            toFile: directory + "/p.json", atomically: true, encoding: .utf8)
        do {
            _ = try await PaywardenSettings.load(environment: [:], file: directory + "/p.json")
            Issue.record("a password in the file was accepted")
        } catch {
            #expect(error.message.contains("PAYWARDEN_DATABASE_PASSWORD_FILE") && !error.message.contains("hunter2"))
        }
    }

    @Test(
        "what could weaken the connection or hide a mistake refuses to start, naming the setting and never the password",
        arguments: [
            (["PAYWARDEN_DATABASE_URL": "postgres://u:hunter2@h/db?sslmode=prefer"], "prefer and allow"),
            (["PAYWARDEN_DATABASE_URL": "postgres://u:hunter2@h/db?sslmode=allow"], "prefer and allow"),
            (["PAYWARDEN_DATABASE_URL": "postgres://u:hunter2@h/db?connect_timeout=5"], "connect_timeout is not understood"),
            (["PAYWARDEN_DATABASE_URL": "postgres://u:hunter2@h/db?sslmode=require&sslrootcert=/etc/hosts"], "would not be checked"),
            (["PAYWARDEN_DATABASE_URL": "postgres://u:hunter2@h/db", "PAYWARDEN_DATABASE_PASSWORD": "x"], "keep one"),
            (["PAYWARDEN_DATABASE_URL": "postgres:///db?host=/run/postgresql&password=hunter2"], "Unix sockets"),
            (["PAYWARDEN_DATABASE_URL": "postgres://h/db?password=hunter2"], "a user name"),
            (["PAYWARDEN_DATABASE_URL": "mysql://u:hunter2@h/db"], "sqlite:PATH, postgres://"),
            (["PAYWARDEN_DATABASE_URL": "mysql://u:hun/ter2#x@h/db"], "sqlite:PATH, postgres://"),
            (["PAYWARDEN_DATABASE_PASSWORD": "hunter2"], "does not name PostgreSQL"),
            (["PAYWARDEN_DATABASE_PASSWORD": "hunter2", "PAYWARDEN_DATABASE_PASSWORD_FILE": "/etc/hostname"], "keep one"),
            (["PAYWARDEN_DATABASE_POOL_SIZE": "0"], "PAYWARDEN_DATABASE_POOL_SIZE"),
            (["PAYWARDEN_DATABASE_AUTO_MIGRATE": "sometimes"], "PAYWARDEN_DATABASE_AUTO_MIGRATE"),
        ])
    func refused(environment: [String: String], message: String) async throws {
        do {
            _ = try await load(environment)
            Issue.record("accepted: \(environment.keys.sorted())")
        } catch {
            #expect(error.message.contains(message), "\(error.message)")
            #expect(!error.message.contains("hunter2") && !error.message.contains("ter2"), "the password is in the error: \(error.message)")
        }
    }
}
