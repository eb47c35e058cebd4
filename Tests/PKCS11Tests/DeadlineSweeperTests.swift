import Synchronization
import Testing

import PaywardenPrimitives

/// The one timer behind every HSM deadline: a run is timed out once its deadline passed and not
/// before, whatever the mix of timeouts, and finished runs do not pile up.
@Suite("Deadline sweeper")
struct DeadlineSweeperTests {
    final class Run: ExpiringRun, @unchecked Sendable {
        let finished = Atomic<Bool>(false)
        let timedOutAt = Mutex<ContinuousClock.Instant?>(nil)
        let added = ContinuousClock.now

        var isFinished: Bool { finished.load(ordering: .relaxed) }

        func timeOut(after timeout: Duration) {
            timedOutAt.withLock { $0 = .now }
            finished.store(true, ordering: .relaxed)
        }

        func finish() { finished.store(true, ordering: .relaxed) }
        var timedOut: Bool { timedOutAt.withLock { $0 != nil } }
    }

    func waitUntil(_ condition: () -> Bool) async throws {
        for _ in 0..<300 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
    }

    @Test func expiresEachRunAtItsOwnDeadlineWhateverTheOrder() async throws {
        let sweeper = DeadlineSweeper()
        // A long timeout first, then shorter ones: the timer must not wait for the first.
        let long = Run()
        sweeper.add(long, timeout: .milliseconds(900))
        let short = Run()
        sweeper.add(short, timeout: .milliseconds(100))
        let finishedInTime = Run()
        sweeper.add(finishedInTime, timeout: .milliseconds(100))
        finishedInTime.finish()
        let middle = Run()
        sweeper.add(middle, timeout: .milliseconds(300))

        try await waitUntil { short.timedOut }
        #expect(short.timedOut)
        let shortAfter = try #require(short.timedOutAt.withLock { $0 }) - short.added
        #expect(shortAfter >= .milliseconds(100) && shortAfter < .milliseconds(900), "\(shortAfter)")
        // That the others did not expire early is read from when they expired, below: checking now
        // would depend on this task being woken within 200 ms of the timer.

        try await waitUntil { middle.timedOut }
        let middleAfter = try #require(middle.timedOutAt.withLock { $0 }) - middle.added
        #expect(middleAfter >= .milliseconds(300) && middleAfter < .milliseconds(900), "\(middleAfter)")

        try await waitUntil { long.timedOut }
        let longAfter = try #require(long.timedOutAt.withLock { $0 }) - long.added
        #expect(longAfter >= .milliseconds(900), "\(longAfter)")
        #expect(!finishedInTime.timedOut)
        #expect(sweeper.count == 0)
    }

    @Test func finishedRunsDoNotAccumulate() async throws {
        let sweeper = DeadlineSweeper()
        for _ in 0..<10_000 {
            let run = Run()
            sweeper.add(run, timeout: .seconds(60))
            run.finish()
        }
        // Each arrival drops the finished runs in front of it: only the last is left.
        #expect(sweeper.count == 1)
        let open = Run()
        sweeper.add(open, timeout: .milliseconds(50))
        try await waitUntil { open.timedOut }
        #expect(open.timedOut)
    }
}
