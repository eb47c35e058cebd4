import ArgumentParser

public struct DevHSMCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "dev-hsm",
        abstract: "The local SoftHSM development token.",
        subcommands: [DevHSMInit.self, DevHSMSandbox.self, DevHSMSampleToken.self]
    )
}
