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

    private let entries = Mutex<[String: Entry]>([:])

    func paypage(_ id: String) -> PaypageRecord? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries[id] else { return nil }
            guard entry.expires > now else {
                entries[id] = nil
                return nil
            }
            return entry.paypage
        }
    }

    func keep(_ paypage: PaypageRecord) {
        let entry = Entry(paypage: paypage, expires: .now + Self.lifetime)
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[paypage.id] = entry
        }
    }

    func removeAll() {
        entries.withLock { $0.removeAll() }
    }
}
