/// Why a store could not do what it was asked: a category the caller acts on, and a message an
/// operator can act on. Messages name tables and rows by their keys' descriptions, never by a
/// value that is itself sensitive (a registration ID, a token value, an account number).
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Category: String, Sendable {
        /// The database cannot be reached or did not answer in time: answer 503 and retry.
        case unavailable
        /// The write would break a uniqueness rule (a duplicate key): the caller redraws or reports.
        case conflict
        /// A row or the schema holds what this build cannot read: stop and tell the operator.
        case corrupt
        /// The schema is older or newer than this build.
        case schema
    }

    public let category: Category
    public let message: String
    /// The table concerned, when known.
    public let table: String?
    /// The row concerned, when known: its key as a non-sensitive description.
    public let row: String?

    public init(_ category: Category, _ message: String, table: String? = nil, row: String? = nil) {
        self.category = category
        self.message = message
        self.table = table
        self.row = row
    }

    public var description: String {
        switch (table, row) {
        case (let table?, let row?): "\(message) (table \(table), row \(row))"
        case (let table?, nil): "\(message) (table \(table))"
        default: message
        }
    }

    /// A value read from `table` that this build cannot interpret.
    public static func unreadable(_ column: String, in table: String, row: String, _ detail: String) -> StorageError {
        StorageError(.corrupt, "column \(column) holds \(detail)", table: table, row: row)
    }
}
