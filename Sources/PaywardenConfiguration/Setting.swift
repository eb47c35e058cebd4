/// One setting of Paywarden: its key in the configuration file, its environment variable, what it
/// accepts, its default and what it is for. ``SettingCatalog`` lists them all; nothing else in the
/// code base names a `PAYWARDEN_` variable.
public struct Setting: Sendable, Hashable {
    /// The key inside the file's `"paywarden"` object, e.g. `hsm_workers`.
    public let key: String
    public let kind: Kind
    public let defaultValue: Default
    /// Where the value may come from, and whether it may be shown.
    public let exposure: Exposure
    public let summary: String

    /// A secret is read from the environment only (a configuration file is copied, versioned and
    /// read by more people than a process environment) and never shown; other settings are shown
    /// and come from the file as well, unless they are needed before the file is read.
    public enum Exposure: Sendable, Hashable {
        case fileOrEnvironment
        case environmentOnly
        case secret
    }

    /// Redacted by `config show` and in errors.
    public var isSecret: Bool { exposure == .secret }
    /// Read from the environment only (never from the configuration file).
    public var environmentOnly: Bool { exposure != .fileOrEnvironment }

    /// `PAYWARDEN_` and the key in capitals: `hsm_workers` → `PAYWARDEN_HSM_WORKERS`.
    public var environmentName: String { "PAYWARDEN_" + key.uppercased() }

    /// What applies when nothing sets the value.
    public enum Default: Sendable, Hashable {
        /// Unset: the feature it configures is off, or another setting stands in.
        case none
        /// This literal value, as it would be written in the environment.
        case value(String)
        /// Computed at start-up (a core count, an embedded certificate): described here.
        case computed(String)

        /// The literal, when there is one.
        public var literal: String? {
            if case .value(let text) = self { return text }
            return nil
        }

        public var description: String {
            switch self {
            case .none: "unset"
            case .value(let text): text
            case .computed(let text): text
            }
        }
    }

    /// What a value must look like.
    public enum Kind: Sendable, Hashable {
        case string
        case path
        case integer(ClosedRange<Int>)
        case boolean
        case choice([String])
        /// `host:port`; port 0 binds any free port.
        case address
        /// A comma-separated list.
        case list
        case url

        /// What the kind accepts, for error messages and documentation.
        public var accepts: String {
            switch self {
            case .string: "text"
            case .path: "a file path"
            case .integer(let range): "a whole number from \(range.lowerBound) to \(range.upperBound)"
            case .boolean: "true or false"
            case .choice(let values): values.joined(separator: ", ")
            case .address: "host:port"
            case .list: "a comma-separated list"
            case .url: "a URL"
            }
        }
    }

    init(_ key: String, _ kind: Kind, default defaultValue: Default = .none, exposure: Exposure = .fileOrEnvironment, _ summary: String) {
        self.key = key
        self.kind = kind
        self.defaultValue = defaultValue
        self.exposure = exposure
        self.summary = summary
    }
}

/// Why the configuration was refused: which setting, what it was given (unless secret), and what
/// it accepts. Start-up fails with this message.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public init(_ setting: Setting, value: String?, expected: String) {
        // A URL's password is never repeated back; a secret not at all.
        let shown = setting.isSecret ? "" : value.map { " is \"\(Redaction.redact($0, of: setting).prefix(80))\":" } ?? ":"
        self.message = "\(setting.environmentName) (\"\(setting.key)\" in the configuration file)\(shown) expected \(expected)"
    }

    public var description: String { message }
}
