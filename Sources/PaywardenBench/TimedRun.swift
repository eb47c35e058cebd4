import Synchronization

/// The timed loop every in-process benchmark runs: `inFlight` tasks call an operation, each
/// call with the next index, until the time is up or the operation says there is no more work.
struct TimedRun {
    let seconds: Double
    let inFlight: Int
    /// Where the calling tasks run: the HSM's workers, or the cooperative pool when nil.
    let executor: (any TaskExecutor)?

    /// Operations per second, and how many were done. `operation` returns false when it had
    /// nothing left to do (its call is then not counted); `ranOut` tells whether that happened
    /// before the time was up.
    func rate(_ operation: @escaping @Sendable (Int) async throws -> Bool) async throws -> (perSecond: Double, ranOut: Bool, count: Int) {
        let next = Counter()
        let ranOut = Flag()
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + .milliseconds(Int(seconds * 1000))
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<inFlight {
                group.addTask(executorPreference: executor) {
                    var count = 0
                    while clock.now < deadline {
                        guard try await operation(next.value.add(1, ordering: .relaxed).oldValue) else {
                            ranOut.value.store(true, ordering: .relaxed)
                            break
                        }
                        count += 1
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = clock.now - start
        return (
            Double(total) / (elapsed / .seconds(1)),
            ranOut.value.load(ordering: .relaxed), total
        )
    }
}

final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

private final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}
