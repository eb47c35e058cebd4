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
    /// A transaction id stored inline (no heap allocation per entry): millions fit in memory.
    private struct Key: Hashable {
        let words: (UInt64, UInt64, UInt64, UInt64)
        let length: Int

        init(_ bytes: [UInt8]) {
            var words: [UInt64] = [0, 0, 0, 0]
            for (index, byte) in bytes.prefix(32).enumerated() { words[index / 8] |= UInt64(byte) << (8 * UInt64(index % 8)) }
            self.words = (words[0], words[1], words[2], words[3])
            self.length = bytes.count
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.words == rhs.words && lhs.length == rhs.length
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(words.0)
            hasher.combine(words.1)
            hasher.combine(words.2)
            hasher.combine(words.3)
        }
    }

    private struct State {
        var current: [Key: Date] = [:]
        var previous: [Key: Date] = [:]
        var rotation = Date.distantPast
    }

    private let state = Mutex(State())
    /// How long a generation lasts: at least the longest claim (the signing-time window).
    private let generationLength: TimeInterval

    public init(generationLength: TimeInterval = 600) {
        self.generationLength = generationLength
    }

    public func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async -> Bool {
        let key = Key(transactionID)
        return state.withLock { state in
            if now >= state.rotation {
                state.previous = state.current
                state.current = [:]
                state.rotation = now.addingTimeInterval(max(generationLength, expiry.timeIntervalSince(now)))
            }
            if let existing = state.current[key] ?? state.previous[key], existing > now { return false }
            state.current[key] = expiry
            return true
        }
    }

    public func release(_ transactionID: [UInt8]) async {
        let key = Key(transactionID)
        state.withLock { state in
            state.current.removeValue(forKey: key)
            state.previous.removeValue(forKey: key)
        }
    }

    /// Transaction ids currently remembered (expired ones included until their generation ends).
    public var count: Int { state.withLock { $0.current.count + $0.previous.count } }
}
