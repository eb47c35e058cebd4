import Foundation

/// The transaction ids of decrypted tokens, with the time until which each could still pass the
/// signing-time window: a token is decrypted once across every instance sharing the database and
/// across restarts.
public protocol ReplayLedger: Sendable {
    /// Records `transactionID` until `expiry`, in one atomic statement (insert, or take over an
    /// expired row). False when the id is recorded and has not expired at `now`.
    func claimTransaction(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws(StorageError) -> Bool
    /// Gives a claim back (the HSM, not the token, failed), so the client can retry.
    func releaseTransaction(_ transactionID: [UInt8]) async throws(StorageError)
    /// Deletes up to `limit` rows that expired at or before `now`; returns how many went.
    func purgeExpiredTransactions(now: Date, limit: Int) async throws(StorageError) -> Int
}
