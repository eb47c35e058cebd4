#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Who may own and read a file that holds a secret (a PIN, a password, an API key, a private key).
/// PostgreSQL's rule for its server key, which is also what OpenSSH asks of a private key:
///
/// - owned by the process's user: group and others have no permission at all (0600, 0400);
/// - owned by root while the process runs as another user: the group may read, nothing more, and
///   others nothing (0640, 0440, 0400). An administrator keeps the file and grants it to the
///   service's group; systemd's `LoadCredential` files are 0400 root, shown as 0440 when an ACL
///   grants the service's user (the group bits are then the ACL's mask);
/// - owned by any other user: refused, since its owner can change or `chmod` it at any time;
/// - a symbolic link: its owner decides which file the path means, so the link must be the
///   process's user's or root's; the file it leads to is then held to the rules above.
///
/// Public files (certificates, CA bundles, the configuration file) are not secrets and are not checked.
///
/// ``read(_:)`` checks what it reads: every link of a chain of links by its owner, then the file
/// through the descriptor it reads from (opened without following a link), so the path cannot be
/// pointed elsewhere between the check and the read. The directories on the way are not checked:
/// keep secret files in a directory only their owner (or root) can write.
public enum SecretFileRule {
    /// Why a secret file cannot be used: held to the rule, or unreadable.
    public enum Refusal: Error, Sendable {
        /// The rule's words, ending with what to do.
        case violation(String)
        /// Missing, a directory, no permission, a loop of links.
        case unreadable(String)

        public var message: String {
            switch self {
            case .violation(let text), .unreadable(let text): text
            }
        }
    }

    /// Links followed before a chain is refused as a loop (the kernel's own limit).
    static let maximumLinks = 40

    /// The bytes of the secret file at `path`, once every link on the way and the file itself have
    /// passed the rule.
    public static func read(_ path: String) throws(Refusal) -> [UInt8] {
        let user = UInt32(geteuid())
        let resolved = try followLinks(path, user: user)
        let descriptor = open(resolved, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw .unreadable("cannot read \(path) (missing, not readable by this user, or changed while it was read)")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw .unreadable("\(path) is not a regular file")
        }
        if let refused = violation(owner: UInt32(status.st_uid), mode: UInt32(status.st_mode), user: user, path: resolved) {
            throw .violation(resolved == path ? refused : "\(path) leads to \(resolved): \(refused)")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            guard count >= 0 else { throw .unreadable("cannot read \(path)") }
            if count == 0 { return bytes }
            bytes += buffer[0..<count]
            guard bytes.count <= 1 << 20 else { throw .unreadable("\(path) is larger than 1 MiB: not a secret file") }
        }
    }

    /// Why the file at `path` may not hold a secret, ending with what to do about it; nil when it
    /// may, or when it cannot be read (the read that follows says so). A check ahead of a read
    /// elsewhere; ``read(_:)`` checks what it reads.
    public static func violation(at path: String) -> String? {
        do {
            _ = try read(path)
            return nil
        } catch {
            if case .violation(let text) = error { return text }
            return nil
        }
    }

    /// The path at the end of `path`'s chain of links, each link's owner checked on the way.
    private static func followLinks(_ path: String, user: UInt32) throws(Refusal) -> String {
        var current = path
        for _ in 0..<maximumLinks {
            var status = stat()
            guard lstat(current, &status) == 0 else { return current }
            guard (status.st_mode & S_IFMT) == S_IFLNK else { return current }
            if let refused = linkViolation(owner: UInt32(status.st_uid), user: user, path: current) {
                throw .violation(current == path ? refused : "\(path) leads through \(current): \(refused)")
            }
            var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let length = readlink(current, &target, target.count - 1)
            guard length > 0 else { throw .unreadable("cannot read the link \(current)") }
            let destination = String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if destination.hasPrefix("/") {
                current = destination
            } else {
                let directory = current.contains("/") ? String(current[..<current.lastIndex(of: "/")!]) : "."
                current = directory + "/" + destination
            }
        }
        throw .unreadable("\(path): too many levels of symbolic links")
    }

    /// The rule for the file itself: owned by `owner`, with permission bits in `mode`, read by a
    /// process running as `user`.
    public static func violation(owner: UInt32, mode: UInt32, user: UInt32, path: String) -> String? {
        let permissions = mode & 0o7777
        let shown = "0" + String(permissions & 0o777, radix: 8)
        if owner == user {
            // Nothing for group or others: read, write or execute.
            guard permissions & 0o077 == 0 else {
                return "\(path) (mode \(shown)) is open to group or others, and a secret file must be its owner's alone: "
                    + "run `chmod 600 \(path)`"
            }
            return nil
        }
        if owner == 0 {
            // Root's file: the group may read (a grant to the service's group), nothing else.
            guard permissions & 0o037 == 0 else {
                return "\(path) (root's, mode \(shown)) is readable by others or writable by its group: run `chmod 640 \(path)` "
                    + "(or `chmod 600 \(path)` and `chown \(user) \(path)`)"
            }
            return nil
        }
        return "\(path) is owned by user \(owner), not by this process's user (\(user)) or root, and its owner can change it "
            + "or open it to others: run `chown \(user) \(path)` and `chmod 600 \(path)`"
    }

    /// The rule for a symbolic link on the way: owned by the process's user or by root.
    public static func linkViolation(owner: UInt32, user: UInt32, path: String) -> String? {
        guard owner != user, owner != 0 else { return nil }
        return "\(path) is a symbolic link owned by user \(owner), not by this process's user (\(user)) or root, and its owner "
            + "can point it at another file: name the file itself, or replace the link with one of your own"
    }
}

/// `read(2)`, out of the reach of ``SecretFileRule/read(_:)``'s name.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
