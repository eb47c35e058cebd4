import Foundation
import PaywardenStorage
import Synchronization

/// Group commit for the replay ledger: claims that arrive while a claim statement runs go to
/// the database together in the next one (one multi-row upsert, one commit), so the ledger costs
/// a statement per batch, not per token. Measured on this machine's load test before batching,
/// one statement per claim: SQLite at 0.75 of the in-memory rate. On SQLite the batch then joins
/// the other writes in a group commit (SQLiteGroupCommit); sending each claim there as a statement
/// of its own instead cost more CPU per decrypt: 530 µs against 402, in two load tests of one day.
///
/// The statement is sent by a claimer, not by a task of its own: the first claimer to find no
/// statement running sends its claim with those waiting, answers them, and hands the next turn
/// to the first claim that arrived meanwhile, rather than a task of the batcher's own hopping to
/// the global executor and back per batch (the engine's own threads aside: PostgresNIO's event
/// loop, SQLite's group-commit writer).
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
        /// A claimer is sending a statement (or has been handed the turn to).
        var sending = false
    }

    /// Rows per statement: two binds each, far below both engines' bind limits.
    static var maximumBatch: Int { 256 }

    private let engine: Driver
    private let state = Mutex(State())

    init(engine: Driver) {
        self.engine = engine
    }

    func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws(StorageError) -> Bool {
        let claim = Claim(transactionID: transactionID, expiry: expiry, now: now)
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let mine = state.withLock { state in
                if state.sending {
                    state.waiting.append(Waiting(claim: claim, continuation: continuation))
                    return false
                }
                state.sending = true
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
            // The next turn goes to the claim that has waited longest; none waiting ends the turns.
            let next = state.withLock { state -> Waiting? in
                guard !state.waiting.isEmpty else {
                    state.sending = false
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
    /// do not fail with it. A cancelled statement was interrupted and rolled back, never committed
    /// (SQLite's group commit does not interrupt: it runs the statement to its end).
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
