import ArgumentParser

public struct HSMCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "hsm",
        abstract: "Inspect the configured HSM.",
        subcommands: [HSMStatus.self]
    )
}
