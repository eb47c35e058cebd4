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

/// A ``ReplayCache`` in this process's memory, swept as it goes.
public final class InMemoryReplayCache: ReplayCache {
    private struct State {
        var expiries: [[UInt8]: Date] = [:]
        var nextSweep = Date.distantPast
    }

    private let state = Mutex(State())

    public init() {}

    public func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async -> Bool {
        state.withLock { state in
            if now >= state.nextSweep {
                state.expiries = state.expiries.filter { $0.value > now }
                state.nextSweep = now.addingTimeInterval(1)
            }
            if let existing = state.expiries[transactionID], existing > now { return false }
            state.expiries[transactionID] = expiry
            return true
        }
    }

    public func release(_ transactionID: [UInt8]) async {
        _ = state.withLock { $0.expiries.removeValue(forKey: transactionID) }
    }

    /// Transaction ids currently remembered.
    public var count: Int { state.withLock { $0.expiries.count } }
}
