import ArgumentParser

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
}
