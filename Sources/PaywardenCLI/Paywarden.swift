import ArgumentParser
import Foundation
import PaywardenAdmin
import PaywardenConfiguration
import PaywardenServer

@main
struct Paywarden: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "paywarden",
        abstract: "Hardware-backed key custody and decryption for Apple Pay.",
        discussion: """
            HSM selection for every command: --pkcs11-module / \(SettingCatalog.pkcs11Module.environmentName), \
            --token-label / \(SettingCatalog.tokenLabel.environmentName) (a label or a pkcs11: URI), and the user PIN \
            from --pin-file / \(SettingCatalog.pinFile.environmentName) or \(SettingCatalog.pin.environmentName) (never an \
            argument). Every setting: `paywarden config show`.
            Exit status: 0 success, 1 refused or failed, 2 usage, 3 misconfiguration, 4 HSM unavailable.
            """,
        subcommands: [
            DevHSMCommand.self, HSMCommand.self, KeysCommand.self, TokenCommand.self, ServeCommand.self, APIKeysCommand.self,
            ConfigCommand.self, DatabaseCommand.self, PaypagesCommand.self, VaultCommand.self, MerchantTokensCommand.self,
            WebMerchantsCommand.self, AuditCommand.self,
        ]
    )

    /// `serve` first puts its event loops in place (``ServerThreads``): that must happen on the
    /// main thread, before anything but this main task uses Swift concurrency.
    static func main() async {
        if CommandLine.arguments.dropFirst().first == ServeCommand.configuration.commandName {
            do {
                if !ServerThreads.install(eventLoops: try EarlySettings.eventLoopThreads()) {
                    let warning = "the event loops could not become Swift's global executor; tasks run on Swift's own threads"
                    FileHandle.standardError.write(Data("paywarden: warning: \(warning)\n".utf8))
                }
            } catch {
                CommandFailure(describing: error).report()
                Foundation.exit(CommandFailure.Status.misconfiguration.rawValue)
            }
        }
        await main(nil)
    }
}
