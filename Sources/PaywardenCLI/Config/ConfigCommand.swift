import ArgumentParser
import Foundation
import PaywardenAdmin
import PaywardenConfiguration
import PaywardenServer

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "The effective configuration.",
        subcommands: [ConfigShow.self, ConfigReference.self]
    )
}

struct ConfigReference: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reference",
        abstract: "Print every setting as a Markdown table (docs/settings.md): variable, file key, accepts, default, what."
    )

    func run() {
        print(SettingsReference.markdown(), terminator: "")
    }
}

struct ConfigShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print every setting: its effective value (secrets redacted), where it came from, and what it is for.",
        discussion: """
            Sources, strongest first: the environment, the configuration file (--config or \
            \(SettingCatalog.configurationFileVariable)), the default. Exits 3 when a value is invalid, naming it.
            """
    )

    @Option(help: "A JSON configuration file (default: \(SettingCatalog.configurationFileVariable)).")
    var config: String?

    @OptionGroup var output: OutputOptions

    struct Line: Encodable {
        let key: String
        let environment: String
        let value: String
        let source: String
        let defaultValue: String
        let summary: String
    }

    func run() async throws {
        do {
            let settings = try await PaywardenSettings.load(file: config)
            // The server's own checks too (API-key entries, trust roots): what `serve` would refuse.
            _ = try ServerConfiguration(settings: settings)
            let effective = Dictionary(settings.effective.map { ($0.setting.key, $0) }, uniquingKeysWith: { first, _ in first })
            let lines = SettingCatalog.all.map { setting in
                let value = effective[setting.key]
                return Line(
                    key: setting.key, environment: setting.environmentName, value: value?.displayValue ?? setting.defaultValue.description,
                    source: (value?.source ?? .default).rawValue, defaultValue: setting.defaultValue.description, summary: setting.summary
                )
            }
            if output.json {
                try printJSON(lines)
            } else {
                let width = lines.map(\.environment.count).max() ?? 0
                for line in lines {
                    print("\(line.environment.padding(toLength: width, withPad: " ", startingAt: 0))  \(line.value)  [\(line.source)]")
                }
            }
        } catch {
            let failure = CommandFailure(describing: error)
            failure.report()
            throw failure.exitCode
        }
    }
}
