import Foundation
import Synchronization

/// Remembers the transaction ids of verified tokens for as long as they could pass the
/// signing-time window, so the same token is decrypted once. A shared database can implement
/// it for several instances.
public protocol ReplayCache: Sendable {
    /// Claims `transactionID`; false when it was claimed before and has not expired.
    func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async -> Bool
    /// Gives a claim back, when the token could not be processed for reasons that were not its
    /// own (the HSM was unavailable), so the client can retry.
    func release(_ transactionID: [UInt8]) async
}

/// A ``ReplayCache`` in this process's memory.
///
/// Claims live in two generations that rotate each time the longest claim could have expired,
/// so expiry costs nothing per token (no sweep over millions of entries under the lock).
public final class InMemoryReplayCache: ReplayCache {
    private struct State {
        var current: [[UInt8]: Date] = [:]
        var previous: [[UInt8]: Date] = [:]
        var rotation = Date.distantPast
    }

    private let state = Mutex(State())
    /// How long a generation lasts: at least the longest claim (the signing-time window).
    private let generationLength: TimeInterval

    public init(generationLength: TimeInterval = 600) {
        self.generationLength = generationLength
    }

    public func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async -> Bool {
        state.withLock { state in
            if now >= state.rotation {
                state.previous = state.current
                state.current = [:]
                state.rotation = now.addingTimeInterval(max(generationLength, expiry.timeIntervalSince(now)))
            }
            if let existing = state.current[transactionID] ?? state.previous[transactionID], existing > now { return false }
            state.current[transactionID] = expiry
            return true
        }
    }

    public func release(_ transactionID: [UInt8]) async {
        state.withLock { state in
            state.current.removeValue(forKey: transactionID)
            state.previous.removeValue(forKey: transactionID)
        }
    }

    /// Transaction ids currently remembered (expired ones included until their generation ends).
    public var count: Int { state.withLock { $0.current.count + $0.previous.count } }
}
