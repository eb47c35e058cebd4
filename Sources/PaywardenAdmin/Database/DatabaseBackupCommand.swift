import ArgumentParser
import Logging
import PaywardenConfiguration
import PaywardenDatabase
import PaywardenServices
import PaywardenStorageSQL
import PaywardenStorageSQLite

struct DatabaseBackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Back the SQLite database up into a new file (0600), safely while serve runs.",
        discussion: """
            SQLite's online backup: one consistent snapshot of what was committed, taken beside the running instances \
            without stopping their writes. To restore, stop serve, put the file in place of the database (its -wal and \
            -shm files removed), and start serve. For PostgreSQL use pg_dump and pg_restore (docs/operations.md). Exits 1 \
            when FILE exists, 3 when the database is not SQLite, 4 when it cannot be read.
            """
    )

    @Argument(help: "The new file (refused if it exists).")
    var file: String

    func run() async throws {
        try await reportingFailures { settings in
            guard case .sqlite(let path) = settings.database.location else {
                throw CommandFailure(
                    .misconfiguration,
                    "db backup copies a SQLite database, and this one is not: back PostgreSQL up with pg_dump (docs/operations.md)")
            }
            let connection = try DatabaseConnection.open(settings.database, create: false, logger: Logger(label: "paywarden"))
            guard let sqlite = (connection.database as? SQLDriverBacked)?.sqlDriver as? SQLiteDriver else {
                throw CommandFailure(.misconfiguration, "the database at \(path) is not SQLite")
            }
            try sqlite.backup(to: file)
            print("backed up \(path) to \(file)")
        }
    }
}
