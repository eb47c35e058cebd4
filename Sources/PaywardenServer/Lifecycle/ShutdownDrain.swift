import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The first thing a graceful shutdown does: for the drain period the service keeps serving while
/// `/readyz` answers 503 `shutting_down` and every response closes its connection, so that a load
/// balancer's health check takes the instance out of rotation and kept-alive clients reconnect
/// elsewhere before any listener closes. Started last among the services, it is shut down
/// first, and the listeners after it return only when the drain is over. Then the deadline runs:
/// a process still there when it ends (a request still in flight, a call that never returns) is
/// ended with status 1, since a cancelled Hummingbird server returns as if it had finished.
final class ShutdownDrain: Service, Sendable {
    let period: Duration
    let deadline: Duration
    let logger: Logger
    private let draining = Atomic<Bool>(false)

    init(period: Duration, deadline: Duration, logger: Logger) {
        self.period = period
        self.deadline = deadline
        self.logger = logger
    }

    /// Whether the drain has begun: read by `/readyz` and by every response's connection handling.
    var isDraining: Bool { draining.load(ordering: .relaxed) }

    func run() async throws {
        // Returns when the group starts shutting down (or throws when it is cancelled instead).
        try await gracefulShutdown()
        draining.store(true, ordering: .relaxed)
        logger.notice(
            "shutting down: /readyz answers 503 while serving on for the drain",
            metadata: ["drain_seconds": "\(period.components.seconds)"])
        try await Task.sleep(for: period)
        logger.notice(
            "drain over: the listeners close and requests in flight finish", metadata: ["deadline_seconds": "\(deadline.components.seconds)"])
        let logger = self.logger
        let seconds = Double(deadline.components.seconds) + Double(deadline.components.attoseconds) / 1e18
        // A thread of the dispatch pool, not a task: it fires even when every task is stuck.
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            logger.error("the shutdown deadline passed with work still in flight: exiting with status 1")
            exit(1)
        }
    }
}
