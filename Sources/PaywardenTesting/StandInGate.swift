import Foundation
import Synchronization

/// Answers a stand-in holds back until the test releases them: the request has arrived and been
/// acted on (Apple registered the merchant, say), but the caller does not hear so yet. What a race
/// test needs to keep one request between its call to a peer and what it does after.
public final class StandInGate: Sendable {
    private struct State {
        var released = false
        var waiting: [@Sendable () -> Void] = []
        var held = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// How many answers have been held so far (released ones included).
    public var held: Int { state.withLock { $0.held } }

    /// Runs `deliver` once the gate is released (at once when it is).
    func hold(_ deliver: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            state.held += 1
            if state.released { return true }
            state.waiting.append(deliver)
            return false
        }
        if now { deliver() }
    }

    /// Lets every held answer go, and every later one through.
    public func release() {
        let waiting = state.withLock { state -> [@Sendable () -> Void] in
            state.released = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for deliver in waiting { deliver() }
    }

    /// Waits until `count` answers have been held.
    public func waitUntilHeld(_ count: Int = 1, timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while held < count {
            guard ContinuousClock.now < deadline else { throw StandInGateTimeout(expected: count, held: held) }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// ``StandInGate/waitUntilHeld(_:timeout:)`` gave up.
public struct StandInGateTimeout: Error, CustomStringConvertible {
    public let expected: Int
    public let held: Int
    public var description: String { "the stand-in held \(held) answers, not \(expected), before the deadline" }
}
