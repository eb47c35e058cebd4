import Foundation

/// Keeps the creation of token objects apart from every other call into the module.
///
/// Both software tokens fail concurrent use while an object is made: SoftHSM's file object store
/// fails a creation now and then while another thread reads the store (`CKR_GENERAL_ERROR` or
/// `CKR_TEMPLATE_INCONSISTENT` from `C_GenerateKeyPair`, SoftHSMv2 issue 573: a read reloads the
/// object file the creation is still writing), and NSS softokn's database stalled past the
/// operation deadline with keys made, destroyed and listed at once. No probe finds a race that
/// shows once in a few hundred calls, and serialising is correct on every module, so a session body
/// that makes token objects or changes their attributes runs alone and every other body shares
/// the lock. Creations are rare on the service's path (the vault's keys at start, a merchant's
/// usage-information sender key once) and take milliseconds; a shared hold is two atomic
/// operations. A creation is preferred over new shared holders, so a steady stream of key
/// operations never holds it off, and it waits at most ``creationWait``: a call stuck in the
/// module stops the creation, not the key operations behind it. Destroying an object is not a
/// creation: a destroy stuck in the module holds nothing else up.
final class TokenObjectLock: @unchecked Sendable {
    /// One for the process: every ``HSM`` opened on a module in it shares the module's object store.
    static let shared = TokenObjectLock()

    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    private init() {
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        // Without it glibc prefers readers, and a change could wait as long as key operations keep coming.
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    /// Runs `body` beside other shared holders, never beside a creation.
    func shared<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// How long a creation waits for the calls running now before it is given up.
    static let creationWait = Duration.seconds(2)

    /// Runs `body` alone, once the calls running now have finished; `timedOut` when they take
    /// longer than ``creationWait``.
    func exclusive<R>(_ body: () throws(PKCS11Error) -> R) throws(PKCS11Error) -> R {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var until = now
        until.tv_sec += Int(Self.creationWait.components.seconds)
        guard pthread_rwlock_timedwrlock(lock, &until) == 0 else {
            throw PKCS11Error(
                code: .timedOut, category: .retry,
                message: "other HSM calls kept running for \(Self.creationWait), so no object was made in the token; retry")
        }
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
