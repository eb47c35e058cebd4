/// A write's place in its database's commit order, handed out with an answer that is decided but
/// not yet durable (``ReplayLedger/claim(_:until:now:)``): ``ReplayLedger/awaitDurable(_:)``
/// returns once that place is durable. Writes become durable in order, so waiting for a ticket
/// also covers every write that was decided before it.
public struct CommitTicket: Sendable, Hashable, Comparable {
    /// The engine's commit batch; 0 when the write was durable before it was answered.
    public let batch: UInt64

    public init(batch: UInt64) {
        self.batch = batch
    }

    /// A write that was durable before it was answered: nothing to wait for.
    public static let durable = CommitTicket(batch: 0)

    public static func < (lhs: CommitTicket, rhs: CommitTicket) -> Bool { lhs.batch < rhs.batch }
}
