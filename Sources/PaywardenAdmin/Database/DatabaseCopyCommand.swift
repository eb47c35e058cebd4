import ArgumentParser
import PaywardenConfiguration
import PaywardenDatabase
import PaywardenServices

struct DatabaseCopyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy every table of the configured database into an empty one (SQLite or PostgreSQL), then compare them.",
        discussion: """
            Stop every `paywarden serve` using the configured database first: a running one is refused (on SQLite it holds \
            a lock on PATH.serving; on PostgreSQL its sessions are named 'paywarden serve' in pg_stat_activity). The target \
            is migrated, and refused if any table holds a row. Every row is copied as it is (sealed payloads byte for byte: \
            the HSM's keys open them), then each table's rows and SHA-256 digest are compared on both sides. The PostgreSQL \
            password comes from \(SettingCatalog.databasePasswordFile.environmentName), never from the URL. Exits 1 when \
            refused or when a table differs, 3 when misconfigured, 4 when a database cannot be reached.
            """
    )

    @Option(help: "The target: postgres://USER@HOST[:PORT]/DATABASE?sslmode=… or sqlite:PATH (no password).")
    var to: String

    func run() async throws {
        try await reportingFailures {
            try await DatabasePair.with(to: to) { _, source, target in
                let tables = try await DatabaseCopy.tables(of: source, location: source.location)
                // Both sides: a `serve` already on the target would answer tokens with an empty ledger.
                let servingLocks = [try await DatabaseCopy.refuseIfServed(source), try await DatabaseCopy.refuseIfServed(target)]
                defer { withExtendedLifetime(servingLocks) {} }
                let status = try await source.schemaStatus()
                guard status.isCurrent else {
                    throw CommandFailure(
                        .misconfiguration,
                        "the configured database has schema version \(status.version) of \(status.latestVersion): run "
                            + "`paywarden db migrate` on it first")
                }
                // Looked at before migrating too: nothing is created in a database that holds rows.
                for migrated in [false, true] {
                    if migrated { _ = try await target.migrate() }
                    if let (table, rows) = try await DatabaseCopy.firstNonEmptyTable(of: target) {
                        throw CommandFailure(
                            .refused,
                            "the target \(target.location) is not empty (\(table) holds \(rows) row(s)): copy into an empty database")
                    }
                }
                do {
                    try await DatabaseCopy.copy(tables, from: source, to: target)
                } catch {
                    let failure = CommandFailure(describing: error)
                    throw CommandFailure(
                        failure.status,
                        "the copy stopped: \(failure.message); the target holds part of the data: empty it (drop and create the "
                            + "PostgreSQL database, or delete the SQLite file) and run `paywarden db copy` again")
                }
                let comparisons = try await DatabaseCopy.compare(tables, source: source, target: target)
                guard DatabasePair.print(comparisons, source: source.location, target: target.location) else {
                    let different = comparisons.filter { !$0.matches }.map(\.table).joined(separator: ", ")
                    throw CommandFailure(
                        .refused,
                        "the copy differs from the source in \(different): do not use the target; empty it and run `paywarden db "
                            + "copy` again with every serve stopped")
                }
                // PostgreSQL holds no lock against a `serve` started meanwhile: looked at again, after the
                // comparison, so a copy that such a server may have written past is not called complete.
                for side in [source, target] where side.driver == "postgres" { _ = try await DatabaseCopy.refuseIfServed(side) }
                print("copied: every table has the same rows at the target")
            }
        }
    }
}
