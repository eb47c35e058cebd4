import ArgumentParser
import PaywardenConfiguration

public struct TokenCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Inspect or decrypt an Apple Pay payment token.",
        discussion: """
            FILE holds a PKPaymentToken or its paymentData (- reads standard input). Trust roots: the embedded \
            Apple Root CA - G3, or \(SettingCatalog.trustRoots.environmentName). Signing-time window: \
            \(SettingCatalog.signingTimeWindow.environmentName) seconds (default 300).
            """,
        subcommands: [TokenInspect.self, TokenDecrypt.self]
    )
}
