import ArgumentParser
import PaywardenDatabase
import PaywardenServices

struct DatabaseCompareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Compare each table of the configured database with another's: rows and a SHA-256 digest of the rows.",
        discussion: """
            What `db copy` checks when it has copied, run again at any time (before the instances move to the copy, say). The \
            target's URL and password are given as to `db copy`. Exits 1 when a table differs, 4 when a database cannot be \
            reached.
            """
    )

    @Option(help: "The other database: postgres://USER@HOST[:PORT]/DATABASE?sslmode=… or sqlite:PATH (no password).")
    var to: String

    func run() async throws {
        try await reportingFailures {
            try await DatabasePair.with(to: to) { _, source, target in
                let tables = try await DatabaseCopy.tables(of: source, location: source.location)
                let comparisons = try await DatabaseCopy.compare(tables, source: source, target: target)
                guard DatabasePair.print(comparisons, source: source.location, target: target.location) else {
                    let different = comparisons.filter { !$0.matches }.map(\.table).joined(separator: ", ")
                    throw CommandFailure(
                        .refused,
                        "\(different) differ(s) between the two databases: do not move to the target; empty it and run `paywarden db "
                            + "copy` again with every serve stopped")
                }
                print("every table has the same rows in both")
            }
        }
    }
}
