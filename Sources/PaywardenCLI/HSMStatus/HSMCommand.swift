import ArgumentParser

struct HSMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hsm",
        abstract: "Inspect the configured HSM.",
        subcommands: [HSMStatus.self]
    )
}
