import Foundation
import PaywardenPrimitives

/// Where the user PIN comes from. Never from a command-line argument, where other users of
/// the machine can read it.
public enum PINSource: Sendable, CustomStringConvertible {
    /// A file holding the PIN (trailing newline ignored), read at every login: 0600 and the
    /// process's user's, or root's with at most group read (``SecretFileRule``), else refused.
    case file(String)
    /// The PIN itself, as the caller read it (from the environment, say).
    case value(Sensitive<[UInt8]>)
    /// No PIN was configured: opening the token fails with `pinUnavailable`.
    case missing

    public var description: String {
        switch self {
        case .file(let path): "file \(path)"
        case .value: "a configured value"
        case .missing: "no PIN source"
        }
    }

    /// Reads the PIN. The error names the source, never the PIN.
    public func read() throws(PKCS11Error) -> [UInt8] {
        var value: [UInt8]
        switch self {
        case .file(let path):
            // Checked at every read, whichever setting, option or URI named the file; the bytes
            // used are those checked.
            do {
                value = try SecretFileRule.read(path)
            } catch {
                switch error {
                case .violation(let text):
                    throw PKCS11Error(code: .pinUnavailable, category: .misconfiguration, message: "the PIN file \(text)")
                case .unreadable:
                    throw PKCS11Error(
                        code: .pinUnavailable, category: .misconfiguration,
                        message: "cannot read the PIN file \(path) (missing, or not readable by this user)")
                }
            }
        case .value(let secret):
            value = secret.revealed
        case .missing:
            throw PKCS11Error(code: .pinUnavailable, category: .misconfiguration, message: "no user PIN was configured")
        }
        // A trailing line break is the file's, not the PIN's: LF or CRLF.
        while let last = value.last, last == 0x0A || last == 0x0D { value.removeLast() }
        guard !value.isEmpty else {
            throw PKCS11Error(code: .pinUnavailable, category: .misconfiguration, message: "the PIN from \(self) is empty")
        }
        return value
    }
}
