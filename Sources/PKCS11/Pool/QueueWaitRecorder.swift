import Synchronization

/// How long a queued job waited before a worker took it, written by the worker and read by the
/// caller once the job is done (for ``HSMOperationRecord/queueWait``).
final class QueueWaitRecorder: Sendable {
    private let wait = Mutex<Duration?>(nil)

    var value: Duration? { wait.withLock { $0 } }

    func record(_ duration: Duration) {
        wait.withLock { $0 = duration }
    }
}
