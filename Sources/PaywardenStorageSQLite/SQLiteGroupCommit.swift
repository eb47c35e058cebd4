import GRDB
import PaywardenStorage
import PaywardenStorageSQL
import Synchronization

/// Group commit for every write to the SQLite file: writes that arrive while a transaction is
/// being written and synced go together in the next one (each statement as it was, in arrival
/// order, one `COMMIT`, one sync of the log), so the database costs a sync per batch, not per
/// write. With `synchronous=FULL` a sync is the cost of a write: about 0.6 ms on this machine's
/// disk, which bounded the vault at one write per sync before.
///
/// The transaction runs on a caller's thread, the first to find none running (an event loop with
/// inline HSM dispatch, an HSM worker with the pool): no hop to a database thread and back. The
/// callers that arrive meanwhile wait without holding their threads, and when the transaction is
/// done the one that waited longest is handed the next turn.
///
/// Each statement is atomic on its own, as when run alone: one that fails (a constraint, say) is
/// undone alone and answered with its error. A failure that ends the transaction (the disk, an
/// interrupt) or a failed commit fails every statement of the batch, which then changed nothing.
/// An answer is given only after the commit: what a caller is told was written is on disk.
final class SQLiteGroupCommit: Sendable {
    struct Write: Sendable {
        let sql: String
        let arguments: StatementArguments
    }

    private enum Turn {
        case answered(Result<[[SQLValue]], StorageError>)
        case write
    }

    private struct Waiting {
        let write: Write
        let continuation: CheckedContinuation<Turn, Never>
    }

    private struct State {
        var waiting: [Waiting] = []
        var writing = false
    }

    /// Statements per transaction, so that one turn cannot hold the writer for long.
    static var maximumBatch: Int { 256 }

    private let pool: DatabasePool
    private let state = Mutex(State())

    init(pool: DatabasePool) {
        self.pool = pool
    }

    func execute(_ write: Write) async -> Result<[[SQLValue]], StorageError> {
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let mine = state.withLock { state in
                if state.writing {
                    state.waiting.append(Waiting(write: write, continuation: continuation))
                    return false
                }
                state.writing = true
                return true
            }
            if mine { continuation.resume(returning: .write) }
        }
        switch turn {
        case .answered(let result):
            return result
        case .write:
            let others = state.withLock { state in
                let batch = Array(state.waiting.prefix(Self.maximumBatch - 1))
                state.waiting.removeFirst(batch.count)
                return batch
            }
            let results = commit([write] + others.map(\.write))
            for (waiting, result) in zip(others, results.dropFirst()) { waiting.continuation.resume(returning: .answered(result)) }
            let next = state.withLock { state -> Waiting? in
                guard !state.waiting.isEmpty else {
                    state.writing = false
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.continuation.resume(returning: .write)
            return results[0]
        }
    }

    /// One transaction for `writes`, on the calling thread; a result per write.
    private func commit(_ writes: [Write]) -> [Result<[[SQLValue]], StorageError>] {
        do {
            return try pool.writeWithoutTransaction { db in
                // A lone write needs no transaction of its own: it commits as it ends.
                if writes.count == 1 { return [Result { try Self.rows(writes[0], db) }.mapError { SQLiteDriver.storageError($0) }] }
                try db.execute(sql: "BEGIN IMMEDIATE")
                var results: [Result<[[SQLValue]], StorageError>] = []
                results.reserveCapacity(writes.count)
                for write in writes {
                    do {
                        results.append(.success(try Self.rows(write, db)))
                    } catch {
                        let failure = SQLiteDriver.storageError(error)
                        // SQLite ended the transaction (a full disk, an I/O error): what ran before is undone too.
                        guard db.isInsideTransaction else { return writes.map { _ in .failure(failure) } }
                        results.append(.failure(failure))
                    }
                }
                do {
                    try db.execute(sql: "COMMIT")
                } catch {
                    if db.isInsideTransaction { try? db.execute(sql: "ROLLBACK") }
                    let failure = SQLiteDriver.storageError(error)
                    return writes.map { _ in .failure(failure) }
                }
                return results
            }
        } catch {
            let failure = SQLiteDriver.storageError(error)
            return writes.map { _ in .failure(failure) }
        }
    }

    static func rows(_ write: Write, _ db: Database) throws -> [[SQLValue]] {
        let statement = try db.cachedStatement(sql: write.sql)
        try statement.setArguments(write.arguments)
        return try Row.fetchAll(statement).map { row in row.databaseValues.map(SQLValue.init) }
    }
}
