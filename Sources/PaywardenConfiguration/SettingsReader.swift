import Foundation

/// Reads settings one at a time from the sources, parsing each into its type with one rule per
/// kind, and remembers what it read for `config show`.
struct SettingsReader {
    let sources: ConfigurationSources
    private(set) var effective: [EffectiveSetting] = []

    init(sources: ConfigurationSources) {
        self.sources = sources
    }

    /// The text of `setting`, or its literal default; nil when unset.
    mutating func text(_ setting: Setting) throws(ConfigurationError) -> String? {
        if let (text, source) = try sources.raw(setting) {
            effective.append(EffectiveSetting(setting: setting, value: text, source: source))
            return text
        }
        effective.append(EffectiveSetting(setting: setting, value: setting.defaultValue.literal, source: .default))
        return setting.defaultValue.literal
    }

    mutating func string(_ setting: Setting) throws(ConfigurationError) -> String? {
        try text(setting)
    }

    mutating func integer(_ setting: Setting) throws(ConfigurationError) -> Int? {
        guard let text = try text(setting) else { return nil }
        guard case .integer(let range) = setting.kind, let value = Int(text.trimmingCharacters(in: .whitespaces)),
            range.contains(value)
        else { throw ConfigurationError(setting, value: text, expected: setting.kind.accepts) }
        return value
    }

    mutating func boolean(_ setting: Setting) throws(ConfigurationError) -> Bool {
        try optionalBoolean(setting) ?? false
    }

    /// A boolean whose default depends on other settings: nil when unset.
    mutating func optionalBoolean(_ setting: Setting) throws(ConfigurationError) -> Bool? {
        let text = try self.text(setting)?.lowercased()
        switch text {
        case nil: return nil
        case "false", "0", "no", "off": return false
        case "true", "1", "yes", "on": return true
        default: throw ConfigurationError(setting, value: text, expected: setting.kind.accepts)
        }
    }

    mutating func choice(_ setting: Setting) throws(ConfigurationError) -> String? {
        guard let text = try text(setting)?.lowercased() else { return nil }
        guard case .choice(let values) = setting.kind, values.contains(text) else {
            throw ConfigurationError(setting, value: text, expected: "one of " + setting.kind.accepts)
        }
        return text
    }

    mutating func list(_ setting: Setting) throws(ConfigurationError) -> [String] {
        guard let text = try text(setting) else { return [] }
        return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    mutating func address(_ setting: Setting) throws(ConfigurationError) -> ListenAddress? {
        guard let text = try text(setting) else { return nil }
        guard let address = ListenAddress(text) else { throw ConfigurationError(setting, value: text, expected: setting.kind.accepts) }
        return address
    }

    // A setting whose catalog default is a literal is never unset (``text(_:)`` falls back to
    // the literal), so these read it without a second copy of the default in code. A setting
    // without one is a catalog mistake, which the defaults test meets at once.

    mutating func string(defaulted setting: Setting) throws(ConfigurationError) -> String {
        try Self.defaulted(string(setting), setting)
    }

    mutating func integer(defaulted setting: Setting) throws(ConfigurationError) -> Int {
        try Self.defaulted(integer(setting), setting)
    }

    mutating func choice(defaulted setting: Setting) throws(ConfigurationError) -> String {
        try Self.defaulted(choice(setting), setting)
    }

    mutating func address(defaulted setting: Setting) throws(ConfigurationError) -> ListenAddress {
        try Self.defaulted(address(setting), setting)
    }

    private static func defaulted<Value>(_ value: Value?, _ setting: Setting) -> Value {
        guard let value else { preconditionFailure("\(setting.key) has no literal default in SettingCatalog") }
        return value
    }

    /// A path that must name a readable file when set.
    mutating func file(_ setting: Setting) throws(ConfigurationError) -> String? {
        guard let path = try text(setting) else { return nil }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ConfigurationError(setting, value: path, expected: "a readable file")
        }
        return path
    }
}

/// A `host:port` to listen on; IPv6 hosts in brackets (`[::1]:8080`).
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port)
        else { return nil }
        let host = String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        guard !host.isEmpty else { return nil }
        self.init(host: host, port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// One line of `config show`: a setting's effective value, redacted when it is read (a secret is
/// never kept here, so printing or dumping the settings cannot reveal it), and its source.
public struct EffectiveSetting: Sendable, Hashable {
    public let setting: Setting
    private let shownValue: String?
    public let source: ConfigurationSources.Source

    init(setting: Setting, value: String?, source: ConfigurationSources.Source) {
        self.setting = setting
        self.shownValue = value.map { setting.isSecret ? "<redacted>" : Redaction.redact($0, of: setting) }
        self.source = source
    }

    /// What `config show` prints: secrets as `<redacted>`, a URL without its password.
    public var displayValue: String { shownValue ?? setting.defaultValue.description }
}
