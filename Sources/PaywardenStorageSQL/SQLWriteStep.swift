import PaywardenStorage

/// One statement of an atomic write (``SQLExecutor/write(_:)``): several statements that must
/// hold together, with the little control flow the stores need and both engines can run.
public struct SQLWriteStep: Sendable {
    /// When the step runs.
    public enum Condition: Sendable, Hashable {
        case always
        /// Only when the step before it returned no row (read back what an `ON CONFLICT DO
        /// NOTHING` left in place, on the connection that wrote, so it sees what that one saw).
        case previousReturnedNoRows
    }

    /// What the step must return for the write to go on.
    public enum Requirement: Sendable, Hashable {
        case none
        /// At least one row; otherwise the whole write is undone and reported stopped here (a
        /// compare-and-set that did not match). A step's rows are those its `RETURNING` names, so
        /// a step that returns none changed none.
        case rows
    }

    public let sql: String
    public let binds: [SQLValue]
    public let condition: Condition
    public let requirement: Requirement

    public init(_ sql: String, _ binds: [SQLValue], when condition: Condition = .always, requiring requirement: Requirement = .none) {
        self.sql = sql
        self.binds = binds
        self.condition = condition
        self.requirement = requirement
    }
}

/// What an atomic write did.
public enum SQLWriteOutcome: Sendable {
    /// Every step ran or was skipped: each one's rows, nil for a skipped one.
    case completed([[[SQLValue]]?])
    /// The step at this index did not meet its requirement: nothing was written.
    case stopped(at: Int)

    /// The rows of step `index`, nil when it was skipped or the write stopped.
    public func rows(_ index: Int) -> [[SQLValue]]? {
        guard case .completed(let results) = self, index < results.count else { return nil }
        return results[index]
    }
}

/// An atomic write's outcome, decided, and what to wait for before relying on it surviving a crash.
public struct SQLWrite: Sendable {
    public let outcome: SQLWriteOutcome
    public let ticket: CommitTicket

    public init(outcome: SQLWriteOutcome, ticket: CommitTicket) {
        self.outcome = outcome
        self.ticket = ticket
    }
}
