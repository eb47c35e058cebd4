import Foundation

/// Keeps the creation of token objects apart from every other call into one module, in this process.
///
/// Both software tokens fail concurrent use while an object is made: SoftHSM's file object store
/// fails a creation now and then while another thread reads the store (`CKR_GENERAL_ERROR` or
/// `CKR_TEMPLATE_INCONSISTENT` from `C_GenerateKeyPair`, SoftHSMv2 issue 573: a read reloads the
/// object file the creation is still writing), and NSS softokn's database stalled past the
/// operation deadline with keys made, destroyed and listed at once. No probe finds a race that
/// shows once in a few hundred calls, and serialising is correct on every module, so a session body
/// that makes token objects or changes their attributes runs alone and every other body of the
/// module shares the lock (one per ``PKCS11Module``: another library is not held up). Creations are
/// rare on the service's path (the vault's keys at start, a merchant's usage-information sender key
/// once: AES and P-384, milliseconds); RSA keys are made by admin commands, processes of their own.
/// A shared hold is two atomic operations.
///
/// A creation first waits without holding anyone up, trying for the lock while calls run, and
/// only for the last ``blockingWait`` of ``creationWait`` does it hold new calls back (so a steady
/// stream of key operations cannot keep it off); it is given up, `timedOut`, after
/// ``creationWait``, below the health check's timeout. A call stuck in the module thus stops a
/// creation, and key operations for at most ``blockingWait``. Destroying an object is not a
/// creation. Another process on the same token (an admin command) is not held by this lock.
final class TokenObjectLock: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    /// How long a creation waits for the calls running now before it is given up.
    static let creationWait = Duration.seconds(1)
    /// The end of ``creationWait`` during which new calls wait for the creation.
    static let blockingWait = Duration.milliseconds(100)

    init() {
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        // Without it glibc prefers readers, and the blocking wait could be outlasted by key operations.
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` beside other shared holders, never beside a creation.
    func shared<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        // Never nested: a body is synchronous and cannot call the pool again.
        let acquired = pthread_rwlock_rdlock(lock)
        precondition(acquired == 0, "pthread_rwlock_rdlock: \(acquired)")
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` alone, once the calls running now have finished; `timedOut` when they take
    /// longer than ``creationWait``.
    func exclusive<R>(_ body: () throws(PKCS11Error) -> R) throws(PKCS11Error) -> R {
        let clock = ContinuousClock()
        let politeUntil = clock.now + Self.creationWait - Self.blockingWait
        var acquired = pthread_rwlock_trywrlock(lock) == 0
        while !acquired, clock.now < politeUntil {
            usleep(500)
            acquired = pthread_rwlock_trywrlock(lock) == 0
        }
        if !acquired {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            var until = now.adding(Self.blockingWait)
            let result = pthread_rwlock_timedwrlock(lock, &until)
            guard result == 0 else {
                throw PKCS11Error(
                    code: .timedOut, category: .retry,
                    message: result == ETIMEDOUT
                        ? "other HSM calls kept running for \(Self.creationWait), so no object was made in the token; retry"
                        : "the token-object lock failed (pthread_rwlock_timedwrlock: \(result)); no object was made in the token")
            }
        }
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
