import Dispatch
import Foundation
import GRDB
import PaywardenStorage
import PaywardenStorageSQL
import Synchronization

/// Every write to the SQLite file, at the cost of its statements: a caller runs its write on its
/// own thread, inside the transaction open on the pool's one writer connection (beginning one
/// when none is), and goes on at once with the answer; a syncer commits that transaction, makes
/// the log durable and tells the callers waiting for it, while the next transaction fills.
///
/// Why: with `synchronous=FULL` a commit syncs the log while holding the write lock, and every
/// write waited for a sync and then a hand-back from the writer's thread: about 170 µs of CPU per
/// decrypt on two cores (kernel wake-ups and I/O submission, the Swift runtime, a writer thread
/// woken per batch). Here the connection commits with `synchronous=NORMAL` (the commit writes the
/// log without syncing it; checkpoints still sync before they copy) and the syncer `fdatasync`s the
/// log itself after each commit, outside the write lock (``WriteAheadLogFile``). A request waits
/// only where it must: a token's plaintext leaves once its claim is durable, which its HSM work
/// usually outlasts.
///
/// What a caller is told: its statements' rows, decided (later writes, on the same connection,
/// see them; readers see them once committed), and the batch it joined. ``awaitDurable(_:)``
/// returns once that batch is committed and the log synced, or throws when the batch was lost.
/// Batches commit in order, so a durable batch makes every earlier one durable too, and with it
/// whatever the caller's statements saw of earlier ones.
///
/// Each caller's write is atomic as a unit (a savepoint): a failed statement or an unmet
/// requirement undoes that unit alone. A failure that ends the transaction (a full disk, an I/O
/// error) or a failed commit loses the batch: its callers are told when they wait, and nothing they
/// guarded leaves. A failed sync cannot be trusted to have written anything (Linux may drop the
/// pages it could not write), so every write after it is refused until the service restarts, as
/// PostgreSQL stops on a failed fsync.
///
/// The connection does not wait for a lock another process holds (its busy timeout is zero): an
/// event loop is never held by an admin command's transaction. A caller that finds the lock taken
/// waits on its own task (a sleep, not holding the writer) and tries again, up to the busy timeout.
final class SQLiteWriter: Sendable {
    private struct State {
        /// The batch of the transaction open now; nil when none is.
        var open: UInt64?
        var lastBatch: UInt64 = 0
        /// The syncer's queue is committing batches (or has been asked to).
        var syncing = false
        /// The log outgrew its bound: the next commit copies it whole, holding the writer.
        var restartRequested = false
        /// Batches that were lost, and why, kept for callers that have yet to wait for them.
        var lost: [UInt64: StorageError] = [:]
        /// The newest lost batch dropped from `lost` (a caller of a batch up to it is refused).
        var lossesForgottenThrough: UInt64 = 0
        /// A sync failed: nothing is written any more.
        var failed: StorageError?
        var waiting: [Waiter] = []

        /// Why `batch` was lost, when it was (or may have been: a loss no longer remembered).
        func loss(of batch: UInt64) -> StorageError? {
            if let lost = lost[batch] { return lost }
            guard batch <= lossesForgottenThrough else { return nil }
            return StorageError(.unavailable, "SQLite: the batch of this write may have been lost (a run of failed commits)")
        }
    }

    private struct Waiter {
        let batch: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private let pool: DatabasePool
    /// Syncs the log (``WriteAheadLogFile/sync()``); nil on success, else what failed.
    private let syncLog: @Sendable () -> String?
    /// Copies the whole log into the database while the writer is held, so that the next
    /// transaction writes it from its start; true when it did.
    private let checkpoint: @Sendable () -> Bool
    /// Whether the log has outgrown its bound, looked at after each sync.
    private let logOutgrown: @Sendable () -> Bool
    private let busyTimeout: Duration
    private let state = Mutex(State())
    /// The last batch whose log is synced, read without the lock on every wait.
    private let durable = Atomic<UInt64>(0)
    private let syncer = DispatchQueue(label: "paywarden.sqlite.sync")
    let statistics = SQLiteWriterStatistics()

    init(
        pool: DatabasePool, busyTimeout: Duration, syncLog: @escaping @Sendable () -> String?,
        checkpoint: @escaping @Sendable () -> Bool, logOutgrown: @escaping @Sendable () -> Bool
    ) {
        self.pool = pool
        self.syncLog = syncLog
        self.busyTimeout = busyTimeout
        self.checkpoint = checkpoint
        self.logOutgrown = logOutgrown
    }

    // MARK: Writing

    /// Runs `steps` as one unit in the open transaction; the outcome is decided when this returns.
    func write(_ steps: [SQLWriteStep]) async throws(StorageError) -> SQLWrite {
        let prepared = steps.map(Step.init)
        var lockWait: (deadline: ContinuousClock.Instant, pause: Duration)?
        while true {
            switch attempt(prepared) {
            case .written(let write):
                return write
            case .failed(let error):
                throw error
            case .lockTaken:
                // Another process holds the write lock: this task waits, holding neither the
                // writer nor its thread, and tries again until the busy timeout.
                if lockWait == nil {
                    statistics.lockWaits.add(1, ordering: .relaxed)
                    lockWait = (ContinuousClock.now + busyTimeout, .microseconds(200))
                }
                guard let (deadline, pause) = lockWait, ContinuousClock.now < deadline else {
                    throw StorageError(.unavailable, "SQLite: the database is locked by another process")
                }
                try? await Task.sleep(for: pause)
                lockWait = (deadline, min(pause * 2, .milliseconds(20)))
            }
        }
    }

    private enum Attempt {
        case written(SQLWrite)
        case failed(StorageError)
        /// No transaction was open and another process holds the write lock.
        case lockTaken
    }

    private func attempt(_ steps: [Step]) -> Attempt {
        let result: Result<(SQLWriteOutcome, UInt64)?, any Error> = Result {
            try pool.writeWithoutTransaction { db in try run(steps, db) }
        }
        // Whatever became of this unit (one refused by a constraint leaves the batch open), a
        // batch that is open must reach the syncer.
        startSyncing()
        switch result {
        case .success(nil):
            return .lockTaken
        case .success(let (outcome, batch)?):
            statistics.writes.add(1, ordering: .relaxed)
            return .written(SQLWrite(outcome: outcome, ticket: CommitTicket(batch: batch)))
        case .failure(let error):
            return .failed(SQLiteDriver.storageError(error))
        }
    }

    /// On the writer connection: begins a batch if none is open, then runs the unit. Nil when no
    /// batch could begin because another process holds the lock.
    private func run(_ steps: [Step], _ db: Database) throws -> (SQLWriteOutcome, UInt64)? {
        let (open, failed) = state.withLock { ($0.open, $0.failed) }
        // After a failed sync nothing more is written (see ``sync(through:)``).
        if let failed { throw failed }
        // A transaction without a batch is one whose commit and rollback both failed: it is
        // ended here, or every later write would find it and fail.
        if db.isInsideTransaction, open == nil { try db.rollback() }
        if !db.isInsideTransaction {
            guard try begin(db) else { return nil }
        }
        guard let batch = state.withLock({ $0.open }) else {
            throw StorageError(.unavailable, "SQLite: the writer's transaction has no batch")
        }
        do {
            return (try Self.unit(steps, db), batch)
        } catch {
            // SQLite ended the transaction (a full disk, an I/O error): what ran before in the
            // batch is undone too, and its callers are told when they wait.
            if !db.isInsideTransaction { lose(batch, SQLiteDriver.storageError(error)) }
            throw error
        }
    }

    /// `BEGIN IMMEDIATE` for a new batch; false when another process holds the lock.
    private func begin(_ db: Database) throws -> Bool {
        do {
            try db.execute(sql: "BEGIN IMMEDIATE")
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
            return false
        }
        state.withLock { state in
            state.lastBatch += 1
            state.open = state.lastBatch
        }
        return true
    }

    /// One statement, prepared once per connection (GRDB's statement cache).
    private struct Step {
        let sql: String
        let arguments: StatementArguments
        let condition: SQLWriteStep.Condition
        let requirement: SQLWriteStep.Requirement

        init(_ step: SQLWriteStep) {
            sql = SQLiteDriver.numberedParameters(step.sql)
            arguments = StatementArguments(step.binds.map(\.databaseValue))
            condition = step.condition
            requirement = step.requirement
        }
    }

    /// The unit inside a savepoint, undone alone when a step fails or a requirement is not met.
    private static func unit(_ steps: [Step], _ db: Database) throws -> SQLWriteOutcome {
        if steps.count == 1 {
            // A lone statement is atomic on its own, and one that returns no row changed none
            // (a step's rows are what its RETURNING names).
            let rows = try rows(steps[0].sql, steps[0].arguments, db)
            return steps[0].requirement == .rows && rows.isEmpty ? .stopped(at: 0) : .completed([rows])
        }
        try db.execute(sql: "SAVEPOINT paywarden_write")
        do {
            var results: [[[SQLValue]]?] = []
            for (index, step) in steps.enumerated() {
                if step.condition == .previousReturnedNoRows, let previous = results.last, previous?.isEmpty == false {
                    results.append(nil)
                    continue
                }
                let rows = try rows(step.sql, step.arguments, db)
                if step.requirement == .rows, rows.isEmpty {
                    try db.execute(sql: "ROLLBACK TO paywarden_write")
                    try db.execute(sql: "RELEASE paywarden_write")
                    return .stopped(at: index)
                }
                results.append(rows)
            }
            try db.execute(sql: "RELEASE paywarden_write")
            return .completed(results)
        } catch {
            if db.isInsideTransaction {
                try? db.execute(sql: "ROLLBACK TO paywarden_write")
                try? db.execute(sql: "RELEASE paywarden_write")
            }
            throw error
        }
    }

    static func rows(_ sql: String, _ arguments: StatementArguments, _ db: Database) throws -> [[SQLValue]] {
        let statement = try db.cachedStatement(sql: sql)
        try statement.setArguments(arguments)
        return try Row.fetchAll(statement).map { row in row.databaseValues.map(SQLValue.init) }
    }

    // MARK: Durability

    /// Returns once `ticket`'s batch is committed and synced; throws when it was lost.
    func awaitDurable(_ ticket: CommitTicket) async throws(StorageError) {
        let batch = ticket.batch
        if durable.load(ordering: .acquiring) >= batch {
            if batch > 0, let lost = state.withLock({ $0.loss(of: batch) }) { throw lost }
            statistics.durableWithoutWaiting.add(1, ordering: .relaxed)
            return
        }
        statistics.durabilityWaits.add(1, ordering: .relaxed)
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let answer: Result<Void, StorageError>? = state.withLock { state in
                    if let lost = state.loss(of: batch) { return .failure(lost) }
                    // Never durable after a failed sync: the syncer stops at the failure.
                    if let failed = state.failed, batch > durable.load(ordering: .acquiring) { return .failure(failed) }
                    if durable.load(ordering: .acquiring) >= batch { return .success(()) }
                    state.waiting.append(Waiter(batch: batch, continuation: continuation))
                    return nil
                }
                if let answer { continuation.resume(with: answer) }
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.unavailable, "SQLite: \(error)")
        }
    }

    /// The batch's transaction is gone: whoever waits for it is told.
    private func lose(_ batch: UInt64, _ error: StorageError) {
        let waiters = state.withLock { state -> [Waiter] in
            if state.open == batch { state.open = nil }
            state.lost[batch] = error
            // A caller waits for its batch within its request: the oldest losses can go, but a
            // batch at or below the last one forgotten is never taken for durable.
            if state.lost.count > 256, let oldest = state.lost.keys.min() {
                state.lost[oldest] = nil
                state.lossesForgottenThrough = max(state.lossesForgottenThrough, oldest)
            }
            let lost = state.waiting.filter { $0.batch == batch }
            state.waiting.removeAll { $0.batch == batch }
            return lost
        }
        for waiter in waiters { waiter.continuation.resume(throwing: error) }
    }

    // MARK: The syncer

    /// A batch is open: the syncer's queue commits it (and the ones after) unless it is at it already.
    private func startSyncing() {
        let start = state.withLock { state in
            guard state.open != nil, !state.syncing else { return false }
            state.syncing = true
            return true
        }
        if start { syncer.async { self.syncWhileBatchesCome() } }
    }

    /// Commits the open batch, syncs the log, tells its waiters; again while a batch is open (under
    /// load the next one has filled meanwhile, so the queue never sleeps), then stops.
    private func syncWhileBatchesCome() {
        while true {
            let (open, restart, failed) = state.withLock { state in
                if state.open == nil || state.failed != nil { state.syncing = false }
                return (state.open, state.restartRequested, state.failed)
            }
            if let failed {
                // Nothing commits after a failed sync: a later sync that succeeds would make
                // batches count as durable whose log pages the kernel may have dropped.
                if let open { abandon(open, failed) }
                return
            }
            guard open != nil else { return }
            guard let committed = commit(restartingLog: restart) else { continue }
            sync(through: committed)
            // Looked at here, once a batch, rather than by a timer: commits that never pause
            // outgrow any timer's period (a passive checkpoint cannot start the log over under them).
            if logOutgrown() { state.withLock { $0.restartRequested = true } }
        }
    }

    /// Rolls the open batch back and tells its callers, after a failed sync.
    private func abandon(_ batch: UInt64, _ error: StorageError) {
        pool.writeWithoutTransaction { db in
            if db.isInsideTransaction, state.withLock({ $0.open }) == batch { try? db.rollback() }
        }
        lose(batch, error)
    }

    /// Commits the open batch; nil when it was lost. With `restartingLog`, also copies the log into
    /// the database before letting the writer go, so the next transaction starts the log over.
    private func commit(restartingLog: Bool) -> UInt64? {
        pool.writeWithoutTransaction { db -> UInt64? in
            guard let batch = state.withLock({ $0.open }) else { return nil }
            do {
                try db.commit()
            } catch {
                if db.isInsideTransaction { try? db.rollback() }
                lose(batch, SQLiteDriver.storageError(error))
                return nil
            }
            state.withLock { $0.open = nil }
            statistics.batches.add(1, ordering: .relaxed)
            if restartingLog {
                // Nothing commits while this runs, so it copies the whole log: the next
                // transaction finds it all in the database and writes the log from its start.
                // One that could not copy everything (a reader's older snapshot) is tried again
                // at the next commit.
                if checkpoint() {
                    state.withLock { $0.restartRequested = false }
                    statistics.heldCheckpoints.add(1, ordering: .relaxed)
                }
            }
            return batch
        }
    }

    /// Syncs the log, then answers everyone waiting for `batch` or an earlier one.
    private func sync(through batch: UInt64) {
        let failure = syncLog()
        statistics.syncs.add(1, ordering: .relaxed)
        let (ready, error) = state.withLock { state -> ([Waiter], StorageError?) in
            if let failure {
                let error = StorageError(
                    .unavailable,
                    "SQLite: the write-ahead log could not be synced (\(failure)); restart the service once the disk is fixed")
                state.failed = error
                defer { state.waiting = [] }
                return (state.waiting, error)
            }
            durable.store(batch, ordering: .releasing)
            let ready = state.waiting.filter { $0.batch <= batch }
            state.waiting.removeAll { $0.batch <= batch }
            return (ready, nil)
        }
        for waiter in ready {
            if let error { waiter.continuation.resume(throwing: error) } else { waiter.continuation.resume() }
        }
    }

    /// The writes refused since a sync failed, if one did.
    var failure: StorageError? { state.withLock { $0.failed } }
}

/// What the writer did, counted since it was opened: for `paywarden-bench`, the load test and tests.
final class SQLiteWriterStatistics: Sendable {
    /// Units written.
    let writes = Atomic<Int>(0)
    /// Transactions committed.
    let batches = Atomic<Int>(0)
    /// Syncs of the log.
    let syncs = Atomic<Int>(0)
    /// Waits for durability that found their batch durable already, and those that suspended.
    let durableWithoutWaiting = Atomic<Int>(0)
    let durabilityWaits = Atomic<Int>(0)
    /// Writes that found another process holding the lock and waited on the syncer's queue.
    let lockWaits = Atomic<Int>(0)
    /// Checkpoints run while holding the writer, to start the log over.
    let heldCheckpoints = Atomic<Int>(0)
}
