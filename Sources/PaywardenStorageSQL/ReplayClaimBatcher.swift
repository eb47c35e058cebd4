import Foundation
import PaywardenStorage
import Synchronization

/// Group commit for the replay ledger of an engine whose every statement is a round trip to a
/// server (PostgreSQL): claims that arrive while the statements in flight run go to the database
/// together in the next one (one multi-row upsert, one commit), so the ledger costs a round trip
/// and a log flush per batch, not per token. Up to ``maximumInFlight`` statements run at once, on
/// as many pooled connections: one at a time left the server's cores idle while a batch's commit
/// waited for its flush, and every claim behind it waited too. (SQLite needs none of this: a
/// claim is a statement on the caller's thread in the writer's open transaction, SQLiteWriter.)
///
/// The statement is sent by a claimer, not by a task of its own: a claimer that finds fewer than
/// ``maximumInFlight`` statements running sends its claim with those waiting, answers them, and
/// hands its turn to the first claim that arrived meanwhile, rather than a task of the batcher's
/// own hopping to the global executor and back per batch.
final class ReplayClaimBatcher<Driver: SQLDriver>: Sendable {
    private struct Claim {
        let transactionID: [UInt8]
        let expiry: Date
        let now: Date
    }

    /// What a waiting claim is woken with: its answer, or the turn to send the next statement.
    private enum Turn {
        case answered(Result<Bool, StorageError>)
        case send
    }

    private struct Waiting {
        let claim: Claim
        let continuation: CheckedContinuation<Turn, Never>
    }

    private struct State {
        var waiting: [Waiting] = []
        /// Claimers sending a statement (or handed the turn to).
        var senders = 0
    }

    /// Rows per statement: two binds each, far below PostgreSQL's bind limit.
    static var maximumBatch: Int { 256 }

    /// Statements at once: enough to keep a batch forming while others commit, few enough that
    /// batches stay large (each costs the server a commit).
    static var maximumInFlight: Int { 4 }

    private let engine: Driver
    private let state = Mutex(State())

    init(engine: Driver) {
        self.engine = engine
    }

    func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws(StorageError) -> Bool {
        let claim = Claim(transactionID: transactionID, expiry: expiry, now: now)
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let mine = state.withLock { state in
                if state.senders >= Self.maximumInFlight {
                    state.waiting.append(Waiting(claim: claim, continuation: continuation))
                    return false
                }
                state.senders += 1
                return true
            }
            if mine { continuation.resume(returning: .send) }
        }
        switch turn {
        case .answered(let result):
            return try result.get()
        case .send:
            let others = state.withLock { state in
                let batch = Array(state.waiting.prefix(Self.maximumBatch - 1))
                state.waiting.removeFirst(batch.count)
                return batch
            }
            let result = await send(claim, with: others)
            // This turn goes on with the claim that has waited longest; none waiting ends it.
            let next = state.withLock { state -> Waiting? in
                guard !state.waiting.isEmpty else {
                    state.senders -= 1
                    return nil
                }
                return state.waiting.removeFirst()
            }
            if let next { next.continuation.resume(returning: .send) }
            return try result.get()
        }
    }

    /// Sends `own` with `others` in one statement, answers the others and returns own's answer.
    private func send(_ own: Claim, with others: [Waiting]) async -> Result<Bool, StorageError> {
        let batch = [own] + others.map(\.claim)
        // The same id twice in a batch: the first competes, the rest are replays whatever happens.
        var seen: Set<[UInt8]> = []
        var rows: [Claim] = []
        for claim in batch where seen.insert(claim.transactionID).inserted { rows.append(claim) }
        // In one order in every statement: two statements in flight that carry the same ids wait
        // for each other's rows in the same order, never in a cycle (a deadlock PostgreSQL would
        // end by failing one of them).
        rows.sort { $0.transactionID.lexicographicallyPrecedes($1.transactionID) }
        var binds: [SQLValue] = []
        binds.reserveCapacity(rows.count * 2 + 1)
        var values: [String] = []
        for (index, claim) in rows.enumerated() {
            values.append("($\(2 * index + 1), $\(2 * index + 2))")
            binds.append(.blob(claim.transactionID))
            binds.append(SQLValue(claim.expiry))
        }
        // The earliest "now" of the batch decides what counts as expired: the cautious reading.
        binds.append(SQLValue(rows.map(\.now).min() ?? Date()))
        let sql = """
            INSERT INTO replay_ledger (transaction_id, expires_at) VALUES \(values.joined(separator: ", "))
            ON CONFLICT (transaction_id) DO UPDATE SET expires_at = excluded.expires_at
            WHERE replay_ledger.expires_at <= $\(2 * rows.count + 1)
            RETURNING transaction_id
            """
        do {
            let returned = try await execute(sql, binds)
            let claimed = Set(returned.compactMap { row -> [UInt8]? in if case .blob(let id)? = row.first { id } else { nil } })
            var answered: Set<[UInt8]> = []
            let won = batch.map { claimed.contains($0.transactionID) && answered.insert($0.transactionID).inserted }
            for (waiting, won) in zip(others, won.dropFirst()) { waiting.continuation.resume(returning: .answered(.success(won))) }
            return .success(won[0])
        } catch {
            for waiting in others { waiting.continuation.resume(returning: .answered(.failure(error))) }
            return .failure(error)
        }
    }

    /// The statement, on the sending claimer's task; if that task is cancelled (its caller went
    /// away, the process is stopping), in a task of its own, so the claims it carries for others
    /// do not fail with it. A cancelled statement was interrupted and rolled back, never committed.
    private func execute(_ sql: String, _ binds: [SQLValue]) async throws(StorageError) -> [[SQLValue]] {
        if !Task.isCancelled {
            do {
                return try await engine.execute(sql, binds, writes: true)
            } catch  where !Task.isCancelled {
                throw error
            } catch {}
        }
        let engine = self.engine
        let result = await Task { () async -> Result<[[SQLValue]], StorageError> in
            do throws(StorageError) {
                return .success(try await engine.execute(sql, binds, writes: true))
            } catch {
                return .failure(error)
            }
        }.value
        return try result.get()
    }
}
