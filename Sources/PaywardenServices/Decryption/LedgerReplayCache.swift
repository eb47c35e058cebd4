import ApplePay
import Foundation
import Logging
import PaywardenStorage
import Tracing

/// The decrypter's replay check on the database's replay ledger, shared by every instance on
/// the same database. A claim the database cannot record, or cannot make durable, fails the
/// decryption; a failure that says the database is gone also tells the health monitor, so the next
/// requests are answered at once instead of each waiting for the statement timeout.
public struct LedgerReplayCache: ReplayCache {
    let ledger: any ReplayLedger
    let health: DatabaseHealthService
    let logger: Logger

    /// Traced as the event `replay.claim`, the statement's kind only: never the transaction id.
    public func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws -> ReplayClaim {
        try await traced("replay.claim") { attributes in
            let claim = try await ledger.claim(transactionID, until: expiry, now: now)
            attributes["paywarden.replay.claimed"] = claim.claimed
            return ReplayClaim(isNew: claim.claimed, position: claim.ticket.batch)
        }
    }

    /// Waits for the claim's commit batch to be synced (a claim made durable before it was
    /// answered has nothing to wait for).
    public func confirm(_ claim: ReplayClaim) async throws {
        guard claim.position > 0 else { return }
        do {
            try await ledger.awaitDurable(CommitTicket(batch: claim.position))
        } catch {
            health.failed(error)
            throw error
        }
    }

    public func isClaimed(_ transactionID: [UInt8], now: Date) async throws -> Bool {
        try await traced("replay.look") { _ in try await ledger.isClaimed(transactionID, now: now) }
    }

    public func release(_ transactionID: [UInt8]) async {
        do {
            try await traced("replay.release", toldToHealth: false) { _ in try await ledger.releaseTransaction(transactionID) }
        } catch {
            // The id stays claimed until it expires: that token is refused, never decrypted twice.
            logger.warning("a replay claim could not be given back after an HSM failure", metadata: ["error": "\(error)"])
        }
    }

    /// A ledger statement as an event of the request's span named `operation`, with its duration
    /// (``RequestSpanEvents``), the database's health told of its outcome.
    private func traced<Value>(
        _ operation: String, toldToHealth: Bool = true, _ body: (inout SpanAttributes) async throws -> Value
    ) async throws -> Value {
        let (startedAt, start) = (DefaultTracerClock.now, ContinuousClock.now)
        var attributes = SpanAttributes()
        attributes["db.operation.name"] = operation
        defer {
            attributes["paywarden.duration_us"] = Int((ContinuousClock.now - start) / .microseconds(1))
            RequestSpanEvents.record(operation, at: startedAt, attributes)
        }
        do {
            let value = try await body(&attributes)
            if toldToHealth { health.succeeded() }
            return value
        } catch {
            attributes["paywarden.failed"] = true
            if toldToHealth { health.failed(error) }
            throw error
        }
    }
}
