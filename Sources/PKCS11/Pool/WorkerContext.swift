import Foundation
import Synchronization

/// The state a worker thread keeps for itself: its session and the pool generation that session
/// belongs to. Found through a thread-specific key, so work that is already running on a worker
/// (a task that prefers the pool as its executor) calls the HSM directly instead of hopping.
final class WorkerContext {
    unowned let pool: SessionPool
    private var session: Session?
    private var sessionGeneration = -1
    /// The pool generation current when this worker took its present job.
    var generation = 0
    /// A context of a thread that is not a worker, for inline calls (``InlineContexts``).
    let isInline: Bool
    /// When the inline call running now began (`DispatchTime` nanoseconds), 0 when none is: read
    /// by the pool's watchdog from its own thread.
    let inlineCallStart = Atomic<UInt64>(0)
    /// The inline context's thread ended during maintenance; the pool drops it afterwards (under its lock).
    var threadEnded = false

    init(pool: SessionPool, isInline: Bool = false) {
        self.pool = pool
        self.isInline = isInline
    }

    /// Runs `body` with this worker's session, opening one if there is none for this generation.
    /// A session that met a lost-login error is ended, so the next job opens a fresh one. A body
    /// that `createsTokenObjects` runs alone (``TokenObjectLock``).
    func withSession<R>(createsTokenObjects: Bool = false, _ body: (Session) throws(PKCS11Error) -> R) throws(PKCS11Error) -> R {
        if sessionGeneration != generation {
            // Maintenance ends sessions itself; this one survived a maintenance that failed
            // midway, so its handle may name nothing, or someone else's session.
            session?.abandon()
            session = nil
        }
        let current: Session
        if let session {
            current = session
        } else {
            current = try pool.openSession()
            session = current
            sessionGeneration = generation
        }
        defer {
            // An operation the session could not end would fail the next job with
            // CKR_OPERATION_ACTIVE: the next job gets a fresh session instead.
            if current.needsReplacement, session === current {
                current.close()
                session = nil
            }
        }
        do {
            let lock = pool.tokenObjectLock
            if createsTokenObjects { return try lock.exclusive { () throws(PKCS11Error) in try body(current) } }
            return try lock.shared { () throws(PKCS11Error) in try body(current) }
        } catch {
            if error.category == .relogin {
                // A session whose handle the module disowned may share it with one opened since.
                if error.returnValue == .userNotLoggedIn { current.close() } else { current.abandon() }
                session = nil
            }
            throw error
        }
    }

    func close() {
        session?.close()
        session = nil
    }

    /// Ends the session for maintenance (see ``SessionPool/endWorkerSessions(moduleRestarted:)``).
    func endSession(closing: Bool) {
        if closing { session?.close() } else { session?.abandon() }
        session = nil
    }

    // MARK: Thread-specific storage

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The context of the calling thread, if it is a pool worker.
    static var current: WorkerContext? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<WorkerContext>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Binds `context` to the calling thread for the duration of `body`.
    static func bind(_ context: WorkerContext, _ body: () -> Void) {
        pthread_setspecific(key, Unmanaged.passUnretained(context).toOpaque())
        body()
        pthread_setspecific(key, nil)
    }
}
