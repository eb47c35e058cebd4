import Foundation

/// What `config show`, logs and status output may print of a setting's value.
public enum Redaction {
    /// A URL without the password in its user info (`postgres://user:secret@host` →
    /// `postgres://user:<redacted>@host`); anything else unchanged.
    public static func redactingPassword(inURL text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "<redacted>"
        return components.string?.removingPercentEncoding ?? "<redacted URL>"
    }

    static func redact(_ value: String, of setting: Setting) -> String {
        switch setting.kind {
        case .url: redactingPassword(inURL: value)
        default: value
        }
    }
}
