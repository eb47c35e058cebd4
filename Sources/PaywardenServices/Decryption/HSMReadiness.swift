import Logging
import Synchronization

/// Whether the HSM can be used now: the one record of it. ``HSMMaintenanceService`` decides it
/// (health checks, key-map reloads, recycles, faults) and is its only writer; the decrypt path
/// and `/readyz` read it.
public final class HSMReadiness: Sendable {
    public enum State: Sendable, Equatable {
        /// No check has finished yet. The HSM opened logged in, so decryptions are admitted, but
        /// the service does not report ready until the key map is loaded.
        case starting
        /// The HSM is logged in and the key map loaded.
        case ready
        /// The HSM cannot be used (lost, logged out, being re-established), or no key map was ever
        /// loaded; the reason is for the log.
        case notReady(reason: String)
    }

    private let state = Mutex(State.starting)
    private let metrics: ServerMetrics
    private let logger: Logger

    public init(metrics: ServerMetrics, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
    }

    /// Whether the HSM is logged in and the key map loaded.
    public var isReady: Bool { state.withLock { $0 == .ready } }

    /// Whether decryptions may go to the HSM: until a check says otherwise, they may.
    public var admitsDecryptions: Bool {
        state.withLock { state in
            switch state {
            case .starting, .ready: true
            case .notReady: false
            }
        }
    }

    /// Records the outcome of a check or a failure; logs when readiness changes.
    public func update(ready: Bool, reason: String?) {
        let was = state.withLock { state in
            defer { state = ready ? .ready : .notReady(reason: reason ?? "") }
            return state == .ready
        }
        metrics.setReady(ready)
        guard was != ready else { return }
        if ready {
            logger.info("ready: HSM logged in, key map loaded")
        } else {
            logger.error("not ready: the HSM cannot be used", metadata: ["reason": "\(reason ?? "")"])
        }
    }
}
