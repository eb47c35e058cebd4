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
public enum SecretFileRule {
    /// Why the file at `path` may not hold a secret, ending with what to do about it; nil when it
    /// may, or when it does not exist or cannot be examined (the read that follows fails then,
    /// and says so).
    public static func violation(at path: String) -> String? {
        let user = UInt32(geteuid())
        var link = stat()
        guard lstat(path, &link) == 0 else { return nil }
        var target = link
        var resolved = path
        if (link.st_mode & S_IFMT) == S_IFLNK {
            if let refused = linkViolation(owner: UInt32(link.st_uid), user: user, path: path) { return refused }
            guard stat(path, &target) == 0 else { return nil }
            if let real = realpath(path, nil) {
                resolved = String(cString: real)
                free(real)
            }
        }
        guard let refused = violation(owner: UInt32(target.st_uid), mode: UInt32(target.st_mode), user: user, path: resolved) else {
            return nil
        }
        return resolved == path ? refused : "\(path) leads to \(resolved): \(refused)"
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
