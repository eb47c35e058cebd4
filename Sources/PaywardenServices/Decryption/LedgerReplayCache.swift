import ApplePay
import Foundation
import Logging
import PaywardenStorage
import Tracing

/// The decrypter's replay check on the database's replay ledger, shared by every instance on
/// the same database. A claim the database cannot record fails the decryption; a failure that
/// says the database is gone also tells the health monitor, so the next requests are answered
/// at once instead of each waiting for the statement timeout.
public struct LedgerReplayCache: ReplayCache {
    let ledger: any ReplayLedger
    let health: DatabaseHealthService
    let logger: Logger

    /// Traced as `replay.claim`, the statement's kind only: never the transaction id.
    public func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws -> Bool {
        try await withSpan("replay.claim", ofKind: .client) { span in
            span.attributes["db.operation.name"] = "replay.claim"
            do {
                let claimed = try await ledger.claimTransaction(transactionID, until: expiry, now: now)
                health.succeeded()
                span.attributes["paywarden.replay.claimed"] = claimed
                return claimed
            } catch {
                health.failed(error)
                throw error
            }
        }
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
}
