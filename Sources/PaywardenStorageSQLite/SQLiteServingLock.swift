import PaywardenStorage

#if canImport(Glibc)
    import Glibc
#endif

/// A `flock` on a file beside a SQLite database (`PATH.serving`, 0600) that says who uses it:
/// every `paywarden serve` holds it shared for as long as it runs (several may), and `db copy`
/// holds it exclusive while it reads. Neither waits: the one that comes second is refused, and
/// the kernel releases the lock of a process that ends, however it ends.
public final class SQLiteServingLock: Sendable {
    public enum Mode: Sendable {
        case serving
        case copying
    }

    public let path: String
    private let descriptor: Int32

    /// The lock file of the database at `databasePath`.
    public static func path(for databasePath: String) -> String { databasePath + ".serving" }

    /// Takes the lock on the database at `databasePath` in `mode`; nil when the other mode holds it.
    public static func take(_ mode: Mode, databasePath: String) throws(StorageError) -> SQLiteServingLock? {
        let path = path(for: databasePath)
        // Read-only and readable by all (it holds nothing): flock needs no write access, so a file
        // left by an admin command run as another user (root) never keeps `serve` from starting.
        let descriptor = Glibc.open(path, O_CREAT | O_RDONLY | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw StorageError(.unavailable, "cannot open the lock file \(path): \(String(cString: strerror(errno)))")
        }
        let operation = mode == .serving ? LOCK_SH : LOCK_EX
        guard flock(descriptor, operation | LOCK_NB) == 0 else {
            let failure = errno
            close(descriptor)
            if failure == EWOULDBLOCK { return nil }
            throw StorageError(.unavailable, "cannot lock \(path): \(String(cString: strerror(failure)))")
        }
        return SQLiteServingLock(path: path, descriptor: descriptor)
    }

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
