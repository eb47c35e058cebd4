import Foundation
import PaywardenPrimitives

/// A secret kept in a file (a password, a key): the file's text without its trailing line breaks,
/// LF or CRLF, which are the editor's, not the secret's. Every other character is kept.
public enum SecretFile {
    /// The secret, or nil when the file cannot be read or is not UTF-8 text (a wrong file is
    /// refused at start-up rather than failing at the first request). A file that group or
    /// others can read, or another user owns, is refused; the bytes are those that were checked
    /// (``SecretFileRule/read(_:)``).
    public static func read(_ path: String, for source: String) throws(ConfigurationError) -> String? {
        let bytes: [UInt8]
        do {
            bytes = try SecretFileRule.read(path)
        } catch {
            guard case .violation(let text) = error else { return nil }
            throw ConfigurationError("\(source): \(text)")
        }
        guard var text = String(validating: bytes, as: UTF8.self) else { return nil }
        while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
        return text
    }

    /// Refuses a file that may not hold a secret (``SecretFileRule``: 0600 and the process's
    /// user's, or root's with at most group read), naming `source` (the setting's variable or the
    /// command's option) and what to do. A missing file passes: the read that follows says so.
    public static func check(_ path: String, for source: String) throws(ConfigurationError) {
        if let violation = SecretFileRule.violation(at: path) { throw ConfigurationError("\(source): \(violation)") }
    }
}
