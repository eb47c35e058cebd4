import ArgumentParser
import Foundation
import PKCS11
import PaywardenConfiguration

struct DevHSMInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the local development token (idempotent) and print the environment to export.",
        discussion:
            "Files go under \(SettingCatalog.home.environmentName) (default ./Keys) in softhsm/ (or nss/ with --backend nss): the "
            + "token store, softhsm2.conf, user.pin and so.pin (0600), the development PKI (sandbox/pki) and env, a file to source, "
            + "which names that PKI as the only trust (no real Apple Pay token decrypts under it). NSS softokn is a second, "
            + "independent PKCS#11 implementation: its token is a database in nss/db, named in "
            + "\(SettingCatalog.pkcs11InitReserved.environmentName)."
    )

    @Option(help: "The PKCS#11 implementation: softhsm (SoftHSM 2) or nss (NSS softokn).")
    var backend: DevelopmentToken.Backend = .softhsm

    @Option(name: .customLong("token-label"), help: "The token's label (default: \(SettingCatalog.tokenLabel.environmentName)).")
    var tokenLabel: String?

    @Option(
        name: .customLong("pkcs11-module"),
        help: "The module (default: \(SettingCatalog.pkcs11Module.environmentName) for softhsm, Debian's libsoftokn3.so for nss).")
    var modulePath: String?

    @OptionGroup var output: OutputOptions

    func run() async throws {
        try await reportingFailures { settings in
            let home = settings.home
            let modulePath = modulePath ?? (backend == .softhsm ? settings.hsm.modulePath : NSSSoftoken.debianModulePath)
            // A pkcs11: URI names an existing token; the development token needs a plain label.
            let tokenLabel = tokenLabel ?? (settings.hsm.token.hasPrefix("pkcs11:") ? "paywarden" : settings.hsm.token)
            guard tokenLabel.utf8.count <= 32 else {
                throw CommandFailure(.misconfiguration, "a token label is at most 32 bytes; \"\(tokenLabel)\" is longer")
            }
            var token = DevelopmentToken(home: home, label: tokenLabel, modulePath: modulePath)
            token.backend = backend
            try token.prepareFiles()
            let securityOfficerPIN: [UInt8]
            switch backend {
            case .softhsm:
                // SoftHSM reads its configuration once, when the module is initialised.
                setenv("SOFTHSM2_CONF", token.configurationFile, 1)
                securityOfficerPIN = try token.readPIN(token.securityOfficerPINFile)
            case .nss:
                securityOfficerPIN = []
            }
            let outcome = try await TokenInitializer.ensureToken(
                modulePath: modulePath, initReserved: token.initReserved, label: tokenLabel,
                securityOfficerPIN: securityOfficerPIN, userPIN: token.readPIN(token.userPINFile)
            )
            try token.prepareDevelopmentPKI()
            let created: Bool
            switch outcome {
            case .created: created = true
            case .alreadyPresent: created = false
            }
            if output.json {
                try printJSON(
                    Result(
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
