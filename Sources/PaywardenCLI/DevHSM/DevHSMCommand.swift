import ArgumentParser

struct DevHSMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev-hsm",
        abstract: "The local SoftHSM development token.",
        subcommands: [DevHSMInit.self]
    )
}
