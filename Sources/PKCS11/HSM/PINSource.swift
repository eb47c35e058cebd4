import Foundation

/// Where the user PIN comes from. Never from a command-line argument, where other users of
/// the machine can read it.
public enum PINSource: Sendable, Hashable, CustomStringConvertible {
    /// A file holding the PIN (trailing newline ignored); it should be mode 0600.
    case file(String)
    /// An environment variable holding the PIN.
    case environment(String)

    public var description: String {
        switch self {
        case .file(let path): "file \(path)"
        case .environment(let name): "environment variable \(name)"
        }
    }

    /// Reads the PIN. The error names the source, never the PIN.
    public func read(environment: [String: String] = ProcessInfo.processInfo.environment) throws(PKCS11Error) -> [UInt8] {
        var value: [UInt8]
        switch self {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw PKCS11Error(code: .pinUnavailable, category: .misconfiguration,
                                  message: "cannot read the PIN file \(path); check PAYWARDEN_PIN_FILE and the file's permissions")
            }
            value = Array(data)
        case .environment(let name):
            guard let text = environment[name] else {
                throw PKCS11Error(code: .pinUnavailable, category: .misconfiguration, message: "\(name) is not set")
            }
            value = Array(text.utf8)
        }
        while let last = value.last, last == 0x0A || last == 0x0D { value.removeLast() }
        guard !value.isEmpty else {
            throw PKCS11Error(code: .pinUnavailable, category: .misconfiguration, message: "the PIN from \(self) is empty")
        }
        return value
    }
}
