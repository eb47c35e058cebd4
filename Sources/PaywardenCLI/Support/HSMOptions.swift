import ArgumentParser
import Foundation
import PKCS11

/// The HSM selection every command takes: flags override the environment.
struct HSMOptions: ParsableArguments {
    @Option(name: .customLong("pkcs11-module"), help: "The PKCS#11 library (default: PAYWARDEN_PKCS11_MODULE or \(HSMConfiguration.defaultModulePath)).")
    var modulePath: String?

    @Option(name: .customLong("token-label"), help: "The token's label or a pkcs11: URI (default: PAYWARDEN_TOKEN_LABEL or \(HSMConfiguration.defaultTokenLabel)).")
    var tokenLabel: String?

    @Option(name: .customLong("pin-file"), help: "A file holding the user PIN (default: PAYWARDEN_PIN_FILE, else PAYWARDEN_PIN).")
    var pinFile: String?

    func configuration(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> HSMConfiguration {
        var configuration = try HSMConfiguration.fromEnvironment(environment)
        if let modulePath { configuration.modulePath = modulePath }
        if let tokenLabel { try configuration.setToken(tokenLabel) }
        if let pinFile { configuration.pin = .file(pinFile) }
        return configuration
    }
}
