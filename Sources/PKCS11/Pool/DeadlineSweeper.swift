import Dispatch
import Synchronization

/// An operation that may be given up on when its deadline passes.
protocol ExpiringRun: AnyObject, Sendable {
    var isFinished: Bool { get }
    /// Ends the run with a timeout, unless it finished already.
    func timeOut(after timeout: Duration)
}

/// One timer for every HSM deadline in the process. A dispatch timer per operation cost a timer
/// entry and, ten seconds later, a thread wake-up per request, on the cores the HSM needs
/// (README, "Performance"). Runs are kept per timeout in arrival order, which for one timeout is
/// deadline order, so only the front of each line is ever looked at; runs that finished are
/// dropped from the front as new ones arrive, and the timer is armed for the earliest front.
final class DeadlineSweeper: Sendable {
    static let shared = DeadlineSweeper()

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
        /// When the armed timer fires; nil when none is armed.
        var armed: DispatchTime?
    }

    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "paywarden.pkcs11.deadlines")

    /// How many runs are waiting for their deadline or to be dropped (for tests).
    var count: Int { state.withLock { $0.lines.values.reduce(0) { $0 + $1.entries.count - $1.head } } }

    func add(_ run: any ExpiringRun, timeout: Duration) {
        let nanoseconds = Int(timeout.components.seconds) * 1_000_000_000 + Int(timeout.components.attoseconds / 1_000_000_000)
        let deadline = DispatchTime.now() + .nanoseconds(nanoseconds)
        let arm: DispatchTime? = state.withLock { state in
            var line = state.lines.removeValue(forKey: timeout) ?? Line()
            while let front = line.front, front.run.isFinished { line.dropFront() }
            line.entries.append(Entry(deadline: deadline, run: run))
            state.lines[timeout] = line
            if let armed = state.armed, armed <= deadline { return nil }
            state.armed = deadline
            return deadline
        }
        if let arm { queue.asyncAfter(deadline: arm) { self.sweep() } }
    }

    /// Expires every run whose deadline passed, drops the finished ones in front of them, and
    /// arms the timer for the earliest deadline left.
    private func sweep() {
        let now = DispatchTime.now()
        let (due, arm): ([(any ExpiringRun, Duration)], DispatchTime?) = state.withLock { state in
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
            // Another timer may be armed already (an earlier one fired here); this one stands.
            state.armed = next
            return (due, next)
        }
        for (run, timeout) in due { run.timeOut(after: timeout) }
        if let arm { queue.asyncAfter(deadline: arm) { self.sweep() } }
    }
}
