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

    /// Traced as `replay.claim`, the statement's kind only: never the transaction id.
    public func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws -> ReplayClaim {
        try await traced("replay.claim") { span in
            let claim = try await ledger.claim(transactionID, until: expiry, now: now)
            span.attributes["paywarden.replay.claimed"] = claim.claimed
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
            try await withSpan("replay.release", ofKind: .client) { span in
                span.attributes["db.operation.name"] = "replay.release"
                try await ledger.releaseTransaction(transactionID)
            }
        } catch {
            // The id stays claimed until it expires: that token is refused, never decrypted twice.
            logger.warning("a replay claim could not be given back after an HSM failure", metadata: ["error": "\(error)"])
        }
    }

    /// A ledger statement as a client span named `operation`, the database's health told of its outcome.
    private func traced<Value>(_ operation: String, _ body: (any Span) async throws -> Value) async throws -> Value {
        try await withSpan(operation, ofKind: .client) { span in
            span.attributes["db.operation.name"] = operation
            do {
                let value = try await body(span)
                health.succeeded()
                return value
            } catch {
                health.failed(error)
                throw error
            }
        }
    }
}
