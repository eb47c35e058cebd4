import ArgumentParser
import Foundation
import Logging
import PaywardenConfiguration
import PaywardenDatabase
import PaywardenPrimitives
import PaywardenServices
import PaywardenStorageSQL

/// The two databases of `db copy` and `db compare`: the configured one (the source) and the one
/// `--to` names (the target). The password of `PAYWARDEN_DATABASE_PASSWORD_FILE` (or
/// `PAYWARDEN_DATABASE_PASSWORD`) is PostgreSQL's: the source's when it is PostgreSQL (and then
/// the target's too, should that be PostgreSQL), else the target's.
struct DatabasePair {
    let source: DatabaseConnection
    let target: DatabaseConnection

    /// Loads the settings and opens both databases (SQLite's target file is created, the source's
    /// must exist); `body` runs with each one's pool running.
    static func with<R>(
        to url: String, _ body: (PaywardenSettings, _ source: any SQLDriver, _ target: any SQLDriver) async throws -> R
    ) async throws -> R {
        let (settings, password) = try await settings()
        let pair = try open(to: url, settings: settings, password: password)
        return try await pair.source.withServices { _ in
            try await pair.target.withServices { _ in
                try await body(settings, try engine(pair.source, "the configured database"), try engine(pair.target, "--to"))
            }
        }
    }

    private static func settings() async throws -> (PaywardenSettings, Sensitive<String>?) {
        typealias C = SettingCatalog
        let environment = ProcessInfo.processInfo.environment
        let passwordSettings = [C.databasePasswordFile.environmentName, C.databasePassword.environmentName]
        let withoutPassword = environment.filter { !passwordSettings.contains($0.key) }
        let settings = try await PaywardenSettings.load(environment: withoutPassword)
        CommandLogging.bootstrap(settings, defaultLevel: .warning)
        if case .postgres = settings.database.location {
            let complete = try await PaywardenSettings.load(environment: environment)
            guard case .postgres(let location) = complete.database.location else { return (complete, nil) }
            return (complete, location.password)
        }
        if let file = environment[C.databasePasswordFile.environmentName], !file.isEmpty {
            return (settings, Sensitive(try DatabaseSettings.readPassword(file)))
        }
        return (settings, environment[C.databasePassword.environmentName].map { Sensitive($0) })
    }

    private static func open(to url: String, settings: PaywardenSettings, password: Sensitive<String>?) throws -> DatabasePair {
        typealias C = SettingCatalog
        if URLComponents(string: url)?.password != nil {
            throw CommandFailure(
                .misconfiguration,
                "--to carries a password, which every user of this machine can read in the process list: change that password, "
                    + "put the new one in \(C.databasePasswordFile.environmentName) and give the URL without it")
        }
        var targetSettings = settings.database
        targetSettings.location = try DatabaseSettings.location(url, home: settings.home, password: password)
        for (name, location) in [("the configured database", settings.database.location), ("--to", targetSettings.location)] {
            if case .memory = location {
                throw CommandFailure(
                    .misconfiguration, "\(name) is memory:, which no other process can read: name a SQLite file or PostgreSQL")
            }
        }
        let logger = Logger(label: "paywarden")
        let source = try DatabaseConnection.open(settings.database, create: false, logger: logger)
        let target = try DatabaseConnection.open(targetSettings, create: true, logger: logger)
        guard source.database.location != target.database.location else {
            throw CommandFailure(.misconfiguration, "--to names the configured database itself (\(source.database.location)): name another")
        }
        return DatabasePair(source: source, target: target)
    }

    private static func engine(_ connection: DatabaseConnection, _ name: String) throws -> any SQLDriver {
        guard let backed = connection.database as? SQLDriverBacked else {
            throw CommandFailure(.misconfiguration, "\(name) is not a SQL database: name a SQLite file or PostgreSQL")
        }
        return backed.sqlDriver
    }

    /// Each table's rows and digests on both sides, one line each; true when all match.
    static func print(_ comparisons: [TableComparison], source: String, target: String) -> Bool {
        Swift.print("source: \(source)")
        Swift.print("target: \(target)")
        Swift.print(
            "table".padding(toLength: 32, withPad: " ", startingAt: 0) + "source rows  target rows  source SHA-256     target SHA-256")
        for comparison in comparisons {
            let rows = [comparison.sourceRows, comparison.targetRows].map { String($0).padding(toLength: 11, withPad: " ", startingAt: 0) }
            Swift.print(
                comparison.table.padding(toLength: 32, withPad: " ", startingAt: 0) + rows.joined(separator: "  ") + "  "
                    + comparison.sourceDigest.prefix(16) + "  " + comparison.targetDigest.prefix(16) + "  "
                    + (comparison.matches ? "same" : "DIFFERENT"))
        }
        return comparisons.allSatisfy(\.matches)
    }
}
