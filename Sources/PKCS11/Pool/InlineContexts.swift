import Foundation

/// The sessions a thread that is not a worker keeps for inline calls (``HSMDispatch/inline``):
/// one ``WorkerContext`` per pool the thread has called, found through a thread-specific key.
///
/// A thread keeps its contexts for its life (its pools are told when it ends: Swift's own pool
/// ends idle threads); a pool that was shut down is dropped from the list the next time the thread
/// adds one (its sessions were closed by its shutdown).
final class InlineContexts {
    private struct Entry {
        weak var pool: SessionPool?
        let serial: Int
        let context: WorkerContext
    }

    private var entries: [Entry] = []

    /// The thread ended: its contexts leave their pools, with their sessions.
    deinit {
        for entry in entries { entry.pool?.retire(entry.context) }
    }

    /// The calling thread's context for `pool`; `make` creates (and registers) one the first time.
    static func context(for pool: SessionPool, make: () -> WorkerContext) -> WorkerContext {
        let contexts = current
        for entry in contexts.entries where entry.serial == pool.serial { return entry.context }
        contexts.entries.removeAll { $0.pool == nil }
        let context = make()
        contexts.entries.append(Entry(pool: pool, serial: pool.serial, context: context))
        return context
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
