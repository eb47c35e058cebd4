import Foundation

/// A secret kept in a file (a password, a key): the file's text without its trailing line breaks,
/// LF or CRLF, which are the editor's, not the secret's. Every other character is kept.
public enum SecretFile {
    /// The secret, or nil when the file cannot be read or is not UTF-8 text (a wrong file is
    /// refused at start-up rather than failing at the first request).
    public static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path), var text = String(data: data, encoding: .utf8) else { return nil }
        while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
        return text
    }
}
