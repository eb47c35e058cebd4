import ArgumentParser
import Foundation
import PaywardenServer

@main
struct Paywarden: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "paywarden",
        abstract: "Hardware-backed key custody and decryption for Apple Pay.",
        discussion: """
            HSM selection for every command: --pkcs11-module / PAYWARDEN_PKCS11_MODULE, \
            --token-label / PAYWARDEN_TOKEN_LABEL (a label or a pkcs11: URI), and the user PIN from \
            --pin-file / PAYWARDEN_PIN_FILE or PAYWARDEN_PIN (never an argument).
            Exit status: 0 success, 1 refused or failed, 2 usage, 3 misconfiguration, 4 HSM unavailable.
            """,
        subcommands: [DevHSMCommand.self, HSMCommand.self, KeysCommand.self, TokenCommand.self, ServeCommand.self, APIKeysCommand.self]
    )

    /// `serve` first puts its event loops in place (``ServerThreads``): that must happen on the
    /// main thread, before anything but this main task uses Swift concurrency.
    static func main() async {
        if CommandLine.arguments.dropFirst().first == ServeCommand.configuration.commandName {
            do {
                if try !ServerThreads.install() {
                    FileHandle.standardError.write(Data("paywarden: warning: the event loops could not become Swift's global executor; tasks run on Swift's own threads\n".utf8))
                }
            } catch {
                FileHandle.standardError.write(Data("paywarden: \(error)\n".utf8))
                Foundation.exit(CommandFailure.Status.misconfiguration.rawValue)
            }
        }
        await main(nil)
    }
}
