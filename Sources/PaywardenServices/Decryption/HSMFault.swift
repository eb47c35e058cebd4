import Synchronization

/// The HSM failed a verified token: what the request was told, and when the failure was seen.
/// The maintenance loop acts on it unless a health check that began after it has already
/// succeeded, so a fault reported late does not take a recovered HSM out of service again.
public struct HSMFault: Sendable {
    let reason: String
    let at: ContinuousClock.Instant
}

/// When the last successful health check began, and so which faults it already answered.
public final class HSMHealthRecord: Sendable {
    private let healthySince = Mutex<ContinuousClock.Instant?>(nil)

    /// A check that began at `started` passed. Checks can finish out of order; the latest start counts.
    public func checkPassed(startedAt started: ContinuousClock.Instant) {
        healthySince.withLock { $0 = max($0 ?? started, started) }
    }

    /// Whether a check that began after `fault` was seen has passed since.
    public func isAnswered(_ fault: HSMFault) -> Bool {
        healthySince.withLock { since in since.map { $0 > fault.at } ?? false }
    }
}
