import Foundation
import PaywardenStorage
import Synchronization

/// The paypages eProtect registrations looked up, kept for a second: every registration reads
/// its paypage, and the same few paypages take all of them.
///
/// A paypage changed by this process (created, disabled) is dropped at once; one changed by
/// another (the admin CLI, another instance) is read again within ``lifetime``, so a disabled
/// paypage is refused by every instance within a second. Unknown ids are not kept: ids anyone
/// can make up must not fill the cache, and it is bounded all the same.
final class PaypageCache: Sendable {
    static let lifetime = Duration.seconds(1)
    private static let capacity = 1024

    private struct Entry {
        let paypage: PaypageRecord
        let expires: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Bumped by ``removeAll()``: a read that began before it is not kept.
        var generation = 0
    }

    private let state = Mutex(State())

    func paypage(_ id: String) -> PaypageRecord? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let entry = state.entries[id] else { return nil }
            guard entry.expires > now else {
                state.entries[id] = nil
                return nil
            }
            return entry.paypage
        }
    }

    /// Taken before a read, handed to ``keep(_:readAt:)`` after it.
    func readStarts() -> (generation: Int, at: ContinuousClock.Instant) {
        (state.withLock { $0.generation }, .now)
    }

    /// Keeps what a read that began at `start` found, unless the cache was cleared since: a
    /// paypage disabled meanwhile must not come back. It lasts ``lifetime`` from the read's start.
    func keep(_ paypage: PaypageRecord, readAt start: (generation: Int, at: ContinuousClock.Instant)) {
        let entry = Entry(paypage: paypage, expires: start.at + Self.lifetime)
        state.withLock { state in
            guard state.generation == start.generation else { return }
            if state.entries.count >= Self.capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[paypage.id] = entry
        }
    }

    func removeAll() {
        state.withLock { state in
            state.entries.removeAll()
            state.generation += 1
        }
    }
}
