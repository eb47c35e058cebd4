import Foundation
import PaywardenStorage

#if canImport(Glibc)
    import Glibc
#endif

/// The database's write-ahead log (`…-wal`), opened read-only to sync it and to read its size:
/// the writer commits with `synchronous=NORMAL` (no sync in the commit) and ``SQLiteWriter``
/// makes the commits durable with `fdatasync` on this descriptor, outside the write lock.
///
/// `fdatasync` on any descriptor of the file writes every page of it that was written before the
/// call, whichever descriptor wrote it. The log is never deleted or replaced while the pool's
/// connections are open (SQLite deletes it only when the last connection closes; a restart or a
/// truncating checkpoint rewrites it in place), and SQLite keeps no lock on it (its locks are on
/// the database file and the `-shm` file), so this descriptor can be opened and closed freely.
/// ``checkIdentity()`` still compares it with the path's file once a second, and reopens.
final class WriteAheadLogFile: @unchecked Sendable {
    let path: String
    private let lock = NSLock()
    private var descriptor: Int32

    init(path: String) throws(StorageError) {
        self.path = path
        descriptor = try Self.open(path)
    }

    deinit {
        close(descriptor)
    }

    private static func open(_ path: String) throws(StorageError) -> Int32 {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StorageError(.unavailable, "cannot open the write-ahead log \(path): \(String(cString: strerror(errno)))")
        }
        return descriptor
    }

    /// Syncs the log's data; nil on success, else what failed.
    func sync() -> String? {
        lock.lock()
        defer { lock.unlock() }
        while fdatasync(descriptor) != 0 {
            if errno == EINTR { continue }
            return "fdatasync \(path): \(String(cString: strerror(errno)))"
        }
        return nil
    }

    /// The log's size in bytes (0 when it cannot be read).
    var size: Int {
        lock.lock()
        defer { lock.unlock() }
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
    }

    /// Reopens the log when the path names another file than the descriptor (which SQLite never
    /// does while the pool is open; an operator's hand might).
    func checkIdentity() {
        var atPath = stat()
        guard stat(path, &atPath) == 0 else { return }
        lock.lock()
        defer { lock.unlock() }
        var open = stat()
        guard fstat(descriptor, &open) == 0, open.st_dev != atPath.st_dev || open.st_ino != atPath.st_ino else { return }
        guard let replacement = try? Self.open(path) else { return }
        close(descriptor)
        descriptor = replacement
    }
}
