import Foundation

/// How the outbox retries: Apple keeps an event's details for seven days; attempts back off from
/// `retryBase` doubling to an hour; a claimed event is someone else's for `lease`.
public struct MerchantTokenEventPolicy: Sendable {
    var pendingLimit: Int
    var retryBase: TimeInterval
    var maximumBackoff: TimeInterval = 3600
    var lease: TimeInterval = 120
    var appleRetention: TimeInterval = 7 * 86_400
    /// How long applied and failed events stay listed: past a year of assessments (PCI DSS keeps
    /// audit trails twelve months); they hold no card data either way.
    var eventRetention: TimeInterval = 400 * 86_400

    public init(pendingLimit: Int = 10_000, retryBase: TimeInterval = 30) {
        self.pendingLimit = pendingLimit
        self.retryBase = retryBase
    }

    public func backoff(afterAttempt attempt: Int) -> TimeInterval {
        min(retryBase * pow(2, Double(max(attempt - 1, 0))), maximumBackoff)
    }
}
