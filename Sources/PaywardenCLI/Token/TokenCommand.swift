import ArgumentParser

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Inspect or decrypt an Apple Pay payment token.",
        discussion: """
            FILE holds a PKPaymentToken or its paymentData (- reads standard input). Trust roots: the embedded \
            Apple Root CA - G3, or PAYWARDEN_TRUST_ROOTS. Signing-time window: PAYWARDEN_SIGNING_TIME_WINDOW \
            seconds (default 300).
            """,
        subcommands: [TokenInspect.self, TokenDecrypt.self]
    )
}
