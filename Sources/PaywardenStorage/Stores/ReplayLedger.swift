import Foundation

/// The transaction ids of decrypted tokens, with the time until which each could still pass the
/// signing-time window: a token is decrypted once across every instance sharing the database and
/// across restarts.
public protocol ReplayLedger: Sendable {
    /// Records `transactionID` until `expiry`, in one atomic statement (insert, or take over an
    /// expired row); the claim is refused when the id is recorded and has not expired at `now`.
    ///
    /// The answer is final when this returns: a later claim of the id, from this instance or
    /// another, is refused. The record may not survive a crash until ``awaitDurable(_:)`` returns
    /// for the claim's ticket, so nothing may leave on the strength of the claim before then (the
    /// work it guards can run meanwhile, overlapping the database's sync).
    func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws(StorageError) -> LedgerClaim
    /// Returns once the write that was given `ticket` survives a crash and a power loss. Throws
    /// when it was lost (the claim may not exist then, so what it guarded must not be released).
    func awaitDurable(_ ticket: CommitTicket) async throws(StorageError)
    /// Whether `transactionID` is claimed and live at `now`, read without claiming it: the look
    /// that refuses a replay before the HSM is asked, where the claim itself comes with the write
    /// that stores what the token became (a registration).
    func isClaimed(_ transactionID: [UInt8], now: Date) async throws(StorageError) -> Bool
    /// Gives a claim back (the HSM, not the token, failed), so the client can retry.
    func releaseTransaction(_ transactionID: [UInt8]) async throws(StorageError)
    /// Deletes up to `limit` rows that expired at or before `now`; returns how many went.
    func purgeExpiredTransactions(now: Date, limit: Int) async throws(StorageError) -> Int
}

extension ReplayLedger {
    /// Claims `transactionID` (``claim(_:until:now:)``) and answers once the claim is durable:
    /// true when it was claimed now.
    public func claimTransaction(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws(StorageError) -> Bool {
        let claim = try await claim(transactionID, until: expiry, now: now)
        try await awaitDurable(claim.ticket)
        return claim.claimed
    }
}

/// A replay-ledger claim as its statement decided it (``ReplayLedger/claim(_:until:now:)``).
public struct LedgerClaim: Sendable, Hashable {
    /// True when the id was claimed now; false when it is claimed and live (a replay).
    public let claimed: Bool
    /// What to wait for before anything leaves on the strength of the claim.
    public let ticket: CommitTicket

    public init(claimed: Bool, ticket: CommitTicket) {
        self.claimed = claimed
        self.ticket = ticket
    }
}

/// A transaction id to claim in the same atomic write as what a token became
/// (``RegistrationStore/insertRegistration(_:claiming:)``).
public struct ReplayClaimRequest: Sendable, Hashable {
    public let transactionID: [UInt8]
    /// Until when the claim holds: the token's signing time plus the signing-time window.
    public let expiry: Date
    /// The time the claim is judged at: a recorded claim that expired by then is taken over.
    public let now: Date

    public init(transactionID: [UInt8], expiry: Date, now: Date) {
        self.transactionID = transactionID
        self.expiry = expiry
        self.now = now
    }
}
