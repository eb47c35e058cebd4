/// What a caller should do about a failed HSM call.
public enum ErrorCategory: String, Sendable, Hashable, CaseIterable {
    /// The data given to the HSM was wrong (an off-curve point, a bad tag, a malformed key).
    /// Refuse the request; retrying cannot help.
    case badInput = "bad-input"
    /// A transient failure of the module or device. The same call may succeed later.
    case retry
    /// The session or login state was lost (token removed, module re-initialised).
    /// Re-open the sessions, log in again, re-find the keys, then retry.
    case relogin = "re-login"
    /// The module, token, PIN, key or mechanism is not what the configuration says.
    /// An operator must act; retrying cannot help.
    case misconfiguration
}
