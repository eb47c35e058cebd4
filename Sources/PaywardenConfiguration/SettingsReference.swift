/// `docs/settings.md`, generated from ``SettingCatalog``: every setting's environment variable,
/// file key, what it accepts, its default and what it is for. A test fails when the file and the
/// catalog differ; `paywarden config reference` prints the same text.
public enum SettingsReference {
    public static func markdown() -> String {
        var lines = [
            "# Settings",
            "",
            "<!-- Generated from SettingCatalog by `paywarden config reference`; do not edit. Regenerate with",
            "     `PAYWARDEN_UPDATE_DOCS=1 swift test --filter SettingsReference` (a test fails while it differs). -->",
            "",
            "Every setting comes from the environment, or from the JSON file `PAYWARDEN_CONFIG` names",
            "(`{\"paywarden\": {\"KEY\": …}}`), the environment winning; settings marked *environment only* are",
            "never read from the file, and *secret* ones are never shown. What each does in context, and the",
            "rules for secret files: [operations.md](operations.md#configuration).",
            "",
            "| environment | file key | accepts | default | what |",
            "|---|---|---|---|---|",
        ]
        for setting in SettingCatalog.all {
            let key: String
            switch setting.exposure {
            case .fileOrEnvironment: key = "`\(setting.key)`"
            case .environmentOnly: key = "*environment only*"
            case .secret: key = "*environment only, secret*"
            }
            let defaultValue: String
            switch setting.defaultValue {
            case .none: defaultValue = "unset"
            case .value(let text): defaultValue = "`\(text)`"
            case .computed(let text): defaultValue = text
            }
            let row = ["`\(setting.environmentName)`", key, setting.kind.accepts, defaultValue, setting.summary]
            lines.append("| " + row.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
