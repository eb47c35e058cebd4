import Configuration
import Foundation
import SystemPackage

/// Where settings come from, in order of precedence: the environment, then the configuration file
/// (`--config`, else `PAYWARDEN_CONFIG`), then the catalog's defaults. Both are read through
/// swift-configuration's providers; this type only asks each one for each setting's key, so the
/// source of every value is known (`config show`).
public struct ConfigurationSources: Sendable {
    private let environment: EnvironmentVariablesProvider
    private let file: FileProvider<JSONSnapshot>?
    /// The configuration file, when one is in use.
    public let filePath: String?

    /// Where an effective value came from.
    public enum Source: String, Sendable, Hashable, Codable {
        case `default`
        case file
        case environment
    }

    /// Reads `environment` and the file `file` names, or `PAYWARDEN_CONFIG` names. A named file
    /// that is missing or not a JSON object is an error: a typo must not silently mean defaults.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment, file: String? = nil) async throws(ConfigurationError) {
        let secrets = Set(SettingCatalog.all.filter(\.isSecret).map(\.environmentName))
        self.environment = EnvironmentVariablesProvider(environmentVariables: environment, secretsSpecifier: .specific(secrets))
        let path = file ?? environment[SettingCatalog.configurationFileVariable].flatMap { $0.isEmpty ? nil : $0 }
        filePath = path
        guard let path else {
            self.file = nil
            return
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ConfigurationError(
                "the configuration file \(path) does not exist or is not readable (--config or \(SettingCatalog.configurationFileVariable))"
            )
        }
        try Self.refuseUnknownKeys(in: path)
        do {
            self.file = try await FileProvider<JSONSnapshot>(filePath: FilePath(path))
        } catch {
            throw ConfigurationError("the configuration file \(path) is not a JSON object of settings ({\"paywarden\": {…}}): \(error)")
        }
    }

    /// A key the catalog does not know is a typo that would silently mean a default; a secret or
    /// another environment-only setting in the file would be ignored. Both stop start-up.
    private static func refuseUnknownKeys(in path: String) throws(ConfigurationError) {
        guard let data = FileManager.default.contents(atPath: path),
            let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let settings = root["paywarden"] as? [String: Any]
        else { return }  // the provider reports a malformed file with its own message
        let fileKeys = Set(SettingCatalog.all.filter { !$0.environmentOnly }.map(\.key))
        for key in settings.keys.sorted() where !fileKeys.contains(key) {
            if let setting = SettingCatalog.all.first(where: { $0.key == key }) {
                throw ConfigurationError(
                    "the configuration file \(path) sets \"\(key)\", which is read from the environment only (\(setting.environmentName))")
            }
            throw ConfigurationError(
                "the configuration file \(path) sets \"\(key)\", which is not a Paywarden setting (see `paywarden config show`)")
        }
    }

    /// The raw text of `setting` and where it came from; nil when neither source sets it.
    func raw(_ setting: Setting) throws(ConfigurationError) -> (text: String, source: Source)? {
        let key = AbsoluteConfigKey(["paywarden", setting.key])
        if let text = try Self.text(environment, key, setting), !text.isEmpty { return (text, .environment) }
        guard !setting.environmentOnly, let file else { return nil }
        if let text = try Self.text(file, key, setting) { return (text, .file) }
        return nil
    }

    /// A provider's value as text: environment values are text already; a JSON file may hold a
    /// string, a number, a boolean or an array of strings, all turned into the text the
    /// environment would carry, so one parser per kind serves both sources.
    private static func text(_ provider: some ConfigProvider, _ key: AbsoluteConfigKey, _ setting: Setting) throws(ConfigurationError)
        -> String?
    {
        for type in [ConfigType.string, .int, .bool, .double, .stringArray] {
            guard let result = try? provider.value(forKey: key, type: type) else { continue }
            guard let content = result.value?.content else { return nil }
            switch content {
            case .string(let value): return value
            case .int(let value): return String(value)
            case .bool(let value): return String(value)
            case .double(let value): return String(value)
            case .stringArray(let values): return values.joined(separator: ",")
            default: break
            }
        }
        throw ConfigurationError(setting, value: nil, expected: setting.kind.accepts)
    }
}
