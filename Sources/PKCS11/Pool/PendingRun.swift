import Foundation
import PaywardenPrimitives

/// The caller's side of one operation handed to the workers: resumed exactly once, by the
/// operation's result or by its deadline, whichever comes first.
final class PendingRun<R: Sendable>: ExpiringRun, @unchecked Sendable {
    private let lock = NSLock()
    var continuation: UnsafeContinuation<R, any Error>?
    private var finished = false

    /// Whether the operation may start: false once the caller has had its answer.
    func start() -> Bool {
        lock.withLock { !finished }
    }

    func finish(_ result: Result<R, PKCS11Error>) {
        let continuation: UnsafeContinuation<R, any Error>? = lock.withLock {
            guard !finished else { return nil }
            finished = true
            defer { self.continuation = nil }
            return self.continuation
        }
        continuation?.resume(with: result.mapError { $0 })
    }

    var isFinished: Bool { lock.withLock { finished } }

    /// Finishes with a `timedOut` error once `deadline` has passed, unless finished before
    /// (``DeadlineSweeper``).
    func expire(after deadline: Duration) {
        DeadlineSweeper.shared.add(self, timeout: deadline)
    }

    func timeOut(after timeout: Duration) {
        finish(.failure(.timedOut(after: timeout)))
    }
}
