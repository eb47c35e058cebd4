import Foundation

/// What `config show`, logs and status output may print of a setting's value.
public enum Redaction {
    /// A URL without the password in its user info (`postgres://user:secret@host` →
    /// `postgres://user:<redacted>@host`) or in a `password` parameter (libpq's other place for
    /// it); anything else unchanged.
    public static func redactingPassword(inURL text: String) -> String {
        guard var components = URLComponents(string: text) else {
            // Unparseable (a raw '/' or '#' in the password): everything between the scheme and
            // the last '@' could be a password.
            guard let scheme = text.range(of: "://"), let at = text.range(of: "@", options: .backwards), scheme.upperBound <= at.lowerBound
            else { return text }
            return text[..<scheme.upperBound] + "<redacted>" + text[at.lowerBound...]
        }
        let passwordItems = (components.queryItems ?? []).contains { $0.name.lowercased().hasSuffix("password") }
        guard components.password != nil || passwordItems else { return text }
        if components.password != nil { components.password = "<redacted>" }
        if passwordItems {
            components.queryItems = components.queryItems?.map { item in
                item.name.lowercased().hasSuffix("password") ? URLQueryItem(name: item.name, value: "<redacted>") : item
            }
        }
        return components.string?.removingPercentEncoding ?? "<redacted URL>"
    }

    static func redact(_ value: String, of setting: Setting) -> String {
        switch setting.kind {
        case .url: redactingPassword(inURL: value)
        default: value
        }
    }
}
