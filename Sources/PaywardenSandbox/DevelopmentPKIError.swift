/// Why the development PKI on disk cannot be used; each names the file and what to do.
public enum DevelopmentPKIError: Error, CustomStringConvertible, Equatable {
    /// A file of the PKI is missing or unreadable.
    case unreadable(String)
    /// A certificate and the key beside it are not a pair.
    case keyMismatch(String)
    /// A file of the PKI cannot be written.
    case unwritable(String)

    public var description: String {
        switch self {
        case .unreadable(let path):
            "the development PKI's file \(path) is missing or unreadable; delete its directory and run `paywarden dev-hsm sandbox` again"
        case .unwritable(let path):
            "the development PKI's file \(path) cannot be written; check that its directory is writable by this user"
        case .keyMismatch(let what):
            "the development PKI's key for \(what) does not match it; delete its directory and run `paywarden dev-hsm sandbox` again"
        }
    }
}
