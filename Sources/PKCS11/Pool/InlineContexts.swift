import Foundation

/// The companions a thread that is not a worker has for its inline calls (``HSMDispatch/inline``):
/// one ``InlineCompanion`` (a thread with a session) per pool the thread has called, found through
/// a thread-specific key.
///
/// A thread keeps its companions for its life; when it ends (Swift's own pool ends idle threads)
/// they end too, and their contexts leave their pools with their sessions. A pool that was shut
/// down is dropped from the list the next time the thread adds one (its shutdown stopped them).
final class InlineContexts {
    private struct Entry {
        weak var pool: SessionPool?
        let serial: Int
        let companion: InlineCompanion
    }

    private var entries: [Entry] = []

    /// The thread ended: its companions end, and their contexts leave their pools.
    deinit {
        for entry in entries { entry.companion.stop() }
    }

    /// The calling thread's companion for `pool`; `make` creates (and registers) one the first time.
    static func companion(for pool: SessionPool, make: () -> InlineCompanion) -> InlineCompanion {
        let contexts = current
        for entry in contexts.entries where entry.serial == pool.serial { return entry.companion }
        contexts.entries.removeAll { $0.pool == nil }
        let companion = make()
        contexts.entries.append(Entry(pool: pool, serial: pool.serial, companion: companion))
        return companion
    }

    /// Forgets the calling thread's companion for `pool`, which a call outlasted: its next call gets
    /// a new one (the old one ends once its call returns).
    static func forgetCompanion(for pool: SessionPool) {
        current.entries.removeAll { $0.serial == pool.serial }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // The thread's list is released when the thread ends.
        pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<InlineContexts>.fromOpaque(pointer).release() }
        }
        return key
    }()

    private static var current: InlineContexts {
        if let pointer = pthread_getspecific(key) { return Unmanaged<InlineContexts>.fromOpaque(pointer).takeUnretainedValue() }
        let contexts = InlineContexts()
        pthread_setspecific(key, Unmanaged.passRetained(contexts).toOpaque())
        return contexts
    }
}
