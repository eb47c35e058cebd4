/// What the SQLite writer did since the database was opened (``SQLiteDriver/writeStatistics``):
/// how many writes shared a commit and a sync, and how often a caller had to wait for one.
public struct SQLiteWriteStatistics: Sendable, Hashable {
    /// Atomic writes (units of statements) run.
    public let writes: Int
    /// Transactions committed: the writes each held, on average, is `writes / batches`.
    public let batches: Int
    /// Syncs of the write-ahead log.
    public let syncs: Int
    /// Waits for durability that found the write durable already (its sync overlapped the
    /// caller's own work), and those that had to suspend until the syncer answered.
    public let durableWithoutWaiting: Int
    public let durabilityWaits: Int
    /// Writes that found another process holding the lock and waited off their caller's thread.
    public let lockWaits: Int
    /// Checkpoints that held the writer to start a log grown past its bound over.
    public let heldCheckpoints: Int
    /// The write-ahead log's size now, in bytes.
    public let logSize: Int
}
