import Foundation

/// One of Apple's merchant-token events, kept so each is applied once, a failed fetch or
/// application retried, and every event, its attempts and its effect shown to admins. Apple's
/// notification names the event only; its type and merchant token are known once it is fetched.
public struct MerchantTokenEventRecord: Sendable, Hashable {
    public enum State: String, Sendable, CaseIterable {
        /// Not applied yet: due again at `nextAttemptAt`.
        case pending
        case applied
        /// Given up on (attempts exhausted, or Apple no longer serves it).
        case failed
    }

    /// Apple's event id; the same id arriving again is the same event.
    public var id: String
    /// The Apple Pay merchant identifier whose notification URL it came to.
    public var merchantIdentifier: String
    public var state: State
    /// Apple's event type as sent (`UNLINK`, `UPDATED_METADATA`…), known once fetched.
    public var eventType: String?
    /// The merchant token it concerns, known once fetched.
    public var merchantTokenID: String?
    /// Fetch-and-apply attempts made so far; also what ``EventStore/updateEvent(_:expectedAttempts:)`` compares.
    public var attempts: Int
    /// When a pending event is next due.
    public var nextAttemptAt: Date
    /// Why the last attempt failed, without secrets.
    public var lastError: String?
    /// What applying it did, for admins ("unlinked 2 tokens").
    public var effect: String?
    public var receivedAt: Date
    public var updatedAt: Date
    /// The fetched event as JSON, without account numbers.
    public var detail: [UInt8]?

    public init(
        id: String, merchantIdentifier: String, receivedAt: Date, state: State = .pending, eventType: String? = nil,
        merchantTokenID: String? = nil, attempts: Int = 0, nextAttemptAt: Date? = nil, lastError: String? = nil,
        effect: String? = nil, updatedAt: Date? = nil, detail: [UInt8]? = nil
    ) {
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.state = state
        self.eventType = eventType
        self.merchantTokenID = merchantTokenID
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt ?? receivedAt
        self.lastError = lastError
        self.effect = effect
        self.receivedAt = receivedAt
        self.updatedAt = updatedAt ?? receivedAt
        self.detail = detail
    }
}
