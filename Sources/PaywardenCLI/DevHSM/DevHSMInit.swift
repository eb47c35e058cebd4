import ArgumentParser
import Foundation
import PKCS11

struct DevHSMInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the local SoftHSM development token (idempotent) and print the environment to export.",
        discussion: "Files go under PAYWARDEN_HOME (default ./Keys) in softhsm/: the token store, softhsm2.conf, user.pin and so.pin (0600), and env, a file to source."
    )

    @Option(name: .customLong("token-label"), help: "The token's label.")
    var tokenLabel: String = ProcessInfo.processInfo.environment["PAYWARDEN_TOKEN_LABEL"].flatMap { $0.hasPrefix("pkcs11:") ? nil : $0 } ?? HSMConfiguration.defaultTokenLabel

    @Option(name: .customLong("pkcs11-module"), help: "The SoftHSM module.")
    var modulePath: String = HSMConfiguration.defaultModulePath

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let environment = ProcessInfo.processInfo.environment
            let home = URL(fileURLWithPath: environment["PAYWARDEN_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "Keys").standardizedFileURL.path
            let token = DevelopmentToken(home: home, label: tokenLabel, modulePath: modulePath)
            try token.prepareFiles()
            // SoftHSM reads its configuration once, when the module is initialised.
            setenv("SOFTHSM2_CONF", token.configurationFile, 1)
            let outcome = try await TokenInitializer.ensureToken(
                modulePath: modulePath, label: tokenLabel,
                securityOfficerPIN: token.readPIN(token.securityOfficerPINFile), userPIN: token.readPIN(token.userPINFile)
            )
            let created: Bool
            switch outcome {
            case .created: created = true
            case .alreadyPresent: created = false
            }
            if json {
                try printJSON(Result(
                    created: created, label: tokenLabel, directory: token.directory, environmentFile: token.environmentFile,
                    environment: Dictionary(uniqueKeysWithValues: token.exports)
                ))
            } else {
                let verb = created ? "created" : "already present:"
                FileHandle.standardError.write(Data("paywarden: development token \"\(tokenLabel)\" \(verb) in \(token.directory)\n".utf8))
                for (name, value) in token.exports { print("export \(name)=\(shellQuoted(value))") }
            }
        }
    }

    struct Result: Encodable {
        let created: Bool
        let label: String
        let directory: String
        let environmentFile: String
        let environment: [String: String]
    }
}
