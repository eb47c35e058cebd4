import Foundation

/// One of Apple's merchant-token events, kept so each is applied once and a failed one retried.
public struct MerchantTokenEventRecord: Sendable, Hashable {
    public enum State: String, Sendable, CaseIterable {
        case pending
        case applied
        case failed
    }

    /// Apple's event id; the same id arriving again is the same event.
    public var id: String
    public var merchantIdentifier: String
    public var merchantTokenID: String
    /// Apple's event type, as sent.
    public var kind: String
    public var state: State
    public var attempts: Int
    /// Why the last attempt failed, without secrets.
    public var lastError: String?
    public var receivedAt: Date
    public var updatedAt: Date
    /// The event's details as fetched, without account numbers (JSON).
    public var detail: [UInt8]?

    public init(
        id: String, merchantIdentifier: String, merchantTokenID: String, kind: String, state: State = .pending, attempts: Int = 0,
        lastError: String? = nil, receivedAt: Date, updatedAt: Date? = nil, detail: [UInt8]? = nil
    ) {
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.merchantTokenID = merchantTokenID
        self.kind = kind
        self.state = state
        self.attempts = attempts
        self.lastError = lastError
        self.receivedAt = receivedAt
        self.updatedAt = updatedAt ?? receivedAt
        self.detail = detail
    }
}
