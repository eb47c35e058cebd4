import Foundation

/// An exclusive advisory lock (`flock`) on a file under the Paywarden home, held while one
/// admin command changes keys, so two commands on this machine never interleave their
/// check-then-write steps. Instances on other machines sharing the HSM are not covered.
public final class AdminLock {
    private let descriptor: Int32

    /// Blocks until the lock is held.
    public init(path: String) throws(CustodyError) {
        try? FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CustodyError(.storage, "cannot open the lock file \(path); check that the Paywarden home is writable")
        }
        while flock(descriptor, LOCK_EX) != 0 {
            if errno != EINTR {
                close(descriptor)
                throw CustodyError(.storage, "cannot lock \(path)")
            }
        }
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
