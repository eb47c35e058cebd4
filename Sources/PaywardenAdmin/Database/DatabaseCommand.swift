import ArgumentParser
import Foundation
import Logging
import PaywardenConfiguration
import PaywardenDatabase
import PaywardenServices
import PaywardenStorage

public struct DatabaseCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "The database: its schema and what it holds.",
        discussion: """
            The database is \(SettingCatalog.databaseURL.environmentName) (default: SQLite under \
            \(SettingCatalog.home.environmentName)). The PostgreSQL password comes from \
            \(SettingCatalog.databasePasswordFile.environmentName) or \(SettingCatalog.databasePassword.environmentName), never \
            an argument.
            """,
        subcommands: [
            DatabaseMigrate.self, DatabaseStatus.self, DatabaseCopyCommand.self, DatabaseCompareCommand.self, DatabaseBackupCommand.self,
        ]
    )
}

struct DatabaseMigrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the pending schema migrations (forward only; several instances may run it at once).",
        discussion: "Exits 3 when the database was migrated by a newer Paywarden, 4 when it cannot be reached."
    )

    func run() async throws {
        try await reportingFailures { settings in
            let connection = try DatabaseConnection.open(settings.database, logger: Logger(label: "paywarden"))
            let (applied, status) = try await connection.withServices { database in
                let applied = try await database.migrate()
                return (applied, try await database.schemaStatus())
            }
            let location = connection.database.location
            if applied.isEmpty {
                print("\(connection.database.driver) database at \(location): schema version \(status.version), nothing to migrate")
            } else {
                print(
                    "\(connection.database.driver) database at \(location): applied \(applied.joined(separator: ", ")); "
                        + "schema version \(status.version)")
            }
        }
    }
}

struct DatabaseStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "The driver, the location (password redacted), the schema version and the rows in each table.",
        discussion: "Exits 4 when the database cannot be reached."
    )

    @OptionGroup var output: OutputOptions

    struct Report: Encodable {
        let driver: String
        let location: String
        let schemaVersion: Int
        let latestSchemaVersion: Int
        let pendingMigrations: [String]
        let unknownMigrations: [String]
        let tables: [String: Int]
    }

    func run() async throws {
        try await reportingFailures { settings in
            let connection = try DatabaseConnection.open(settings.database, create: false, logger: Logger(label: "paywarden"))
            let report = try await connection.withServices { database in
                let status = try await database.schemaStatus()
                let counts = try await database.rowCounts()
                return Report(
                    driver: database.driver, location: database.location, schemaVersion: status.version,
                    latestSchemaVersion: status.latestVersion, pendingMigrations: status.pending, unknownMigrations: status.unknown,
                    tables: Dictionary(uniqueKeysWithValues: counts.map { ($0.table, $0.rows) }))
            }
            if output.json {
                try printJSON(report)
                return
            }
            print("driver:    \(report.driver)")
            print("location:  \(report.location)")
            var schema = "schema:    version \(report.schemaVersion) of \(report.latestSchemaVersion)"
            if !report.pendingMigrations.isEmpty { schema += " (pending: \(report.pendingMigrations.joined(separator: ", ")))" }
            if !report.unknownMigrations.isEmpty {
                schema += " (NEWER than this build: \(report.unknownMigrations.joined(separator: ", ")))"
            }
            print(schema)
            for table in Schema.tables {
                print("  \(table.padding(toLength: 22, withPad: " ", startingAt: 0)) \(report.tables[table].map(String.init) ?? "-")")
            }
        }
    }
}
