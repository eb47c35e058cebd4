import Dispatch
import Synchronization

/// An operation that may be given up on when its deadline passes.
public protocol ExpiringRun: AnyObject, Sendable {
    var isFinished: Bool { get }
    /// Ends the run with a timeout, unless it finished already.
    func timeOut(after timeout: Duration)
}

/// One timer for every deadline of its kind in the process (HSM operations, database statements).
/// A timer per operation (a dispatch timer, a sleeping task) cost a timer entry and, seconds later,
/// a thread wake-up per request, on the cores the HSM needs (docs/operations.md, "Performance").
/// Runs are kept per timeout in arrival order, which for one timeout is deadline order, so only
/// the front of each line is ever looked at; runs that finished are dropped from the front as new
/// ones arrive, and the one timer is moved to the earliest front.
// Unchecked: the dispatch timer is not marked Sendable, but a dispatch source may be scheduled from
// any thread; it is only ever scheduled under `state`'s lock.
public final class DeadlineSweeper: @unchecked Sendable {
    /// The HSM operations' sweeper.
    public static let shared = DeadlineSweeper()

    private struct Entry {
        let deadline: DispatchTime
        let run: any ExpiringRun
    }

    /// The runs of one timeout, oldest first, from `head` on.
    private struct Line {
        var entries: [Entry] = []
        var head = 0

        var front: Entry? { head < entries.count ? entries[head] : nil }

        mutating func dropFront() {
            head += 1
            if head == entries.count {
                entries.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024, head * 2 >= entries.count {
                entries.removeFirst(head)
                head = 0
            }
        }
    }

    private struct State {
        var lines: [Duration: Line] = [:]
        /// When the timer fires next; nil when it is idle.
        var armed: DispatchTime?
    }

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "paywarden.deadlines")
    /// The one timer, re-scheduled (never added to) as the earliest deadline changes.
    private let timer: any DispatchSourceTimer

    public init() {
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .distantFuture)
        timer.setEventHandler { [weak self] in self?.sweep() }
        timer.activate()
    }

    deinit {
        timer.cancel()
    }

    /// How many runs are waiting for their deadline or to be dropped (for tests).
    public var count: Int { state.withLock { $0.lines.values.reduce(0) { $0 + $1.entries.count - $1.head } } }

    /// Calls `run.timeOut(after:)` once `timeout` has passed, unless the run has finished by then.
    public func add(_ run: any ExpiringRun, timeout: Duration) {
        let seconds = timeout / .seconds(1)
        state.withLock { state in
            // The time is read under the lock, so each line stays in deadline order.
            let deadline = DispatchTime.now() + seconds
            var line = state.lines.removeValue(forKey: timeout) ?? Line()
            while let front = line.front, front.run.isFinished { line.dropFront() }
            line.entries.append(Entry(deadline: deadline, run: run))
            state.lines[timeout] = line
            if let armed = state.armed, armed <= deadline { return }
            state.armed = deadline
            timer.schedule(deadline: deadline)
        }
    }

    /// Expires every run whose deadline passed, drops the finished ones in front of them, and
    /// arms the timer for the earliest deadline left.
    private func sweep() {
        let now = DispatchTime.now()
        let due: [(any ExpiringRun, Duration)] = state.withLock { state in
            var due: [(any ExpiringRun, Duration)] = []
            var next: DispatchTime?
            for timeout in Array(state.lines.keys) {
                var line = state.lines.removeValue(forKey: timeout)!
                while let front = line.front, front.run.isFinished || front.deadline <= now {
                    if !front.run.isFinished { due.append((front.run, timeout)) }
                    line.dropFront()
                }
                if let front = line.front {
                    next = min(next ?? front.deadline, front.deadline)
                    state.lines[timeout] = line
                }
            }
            state.armed = next
            timer.schedule(deadline: next ?? .distantFuture)
            return due
        }
        for (run, timeout) in due { run.timeOut(after: timeout) }
    }
}
