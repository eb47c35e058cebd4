import ArgumentParser
import Foundation
import PKCS11
import PaywardenConfiguration
import PaywardenServices

/// The HSM selection every command takes: flags override the settings (environment, file).
struct HSMOptions: ParsableArguments {
    @Option(name: .customLong("pkcs11-module"), help: "The PKCS#11 library (default: \(SettingCatalog.pkcs11Module.environmentName)).")
    var modulePath: String?

    @Option(
        name: .customLong("token-label"),
        help: "The token's label or a pkcs11: URI (default: \(SettingCatalog.tokenLabel.environmentName)).")
    var tokenLabel: String?

    @Option(
        name: .customLong("pin-file"),
        help:
            "A file holding the user PIN (default: \(SettingCatalog.pinFile.environmentName), else \(SettingCatalog.pin.environmentName)).")
    var pinFile: String?

    func configuration(_ settings: PaywardenSettings) throws -> HSMConfiguration {
        var hsm = settings.hsm
        if let pinFile {
            // Checked under the option's name; the PIN file setting it overrides is not checked.
            try SecretFile.check(pinFile, for: "--pin-file")
            hsm.pin = .file(pinFile)
        }
        var configuration = try HSMConfiguration(settings: hsm)
        if let modulePath { configuration.modulePath = modulePath }
        if let tokenLabel {
            try configuration.setToken(tokenLabel)
            if case .file(let path) = configuration.pin, path != pinFile {
                try SecretFile.check(path, for: "the pin-source of --token-label")
            }
        }
        if let pinFile { configuration.pin = .file(pinFile) }
        return configuration
    }
}

/// `--json` for every command that prints data.
public struct OutputOptions: ParsableArguments, Sendable {
    @Flag(help: "Print the result as JSON.")
    public var json = false

    public init() {}
}
