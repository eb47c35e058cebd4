import ArgumentParser
import Foundation
import KeyCustody

struct KeysAdopt: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adopt",
        abstract: "Give a key the HSM has, and this database does not know, a record: a pending key of MERCHANT for PURPOSE.",
        discussion: """
            For a key made with another database (its record stayed there; `paywarden db copy` brings every record along). \
            `paywarden keys list` shows such keys as "in the HSM, no record in this database". The key must be sensitive and \
            non-extractable, of a type the purpose takes, and allowed what the purpose does. Then import its certificate with \
            `paywarden keys import-certificate` (download it again from Apple, or ask the processor) to activate it.
            """
    )

    @Argument(help: "The key's CKA_ID in hex, as `paywarden keys list` shows it (a unique prefix of at least 6 digits will do).")
    var keyID: String

    @Option(name: .customLong("merchant-id"), help: "The Apple merchant identifier the key is for, e.g. merchant.com.example.")
    var merchantID: String

    @Option(help: "processing, identity or upstream: what the key was made for.")
    var purpose: KeyPurpose

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await AdminAction("keys.adopt", keyID: keyID, merchantID: merchantID).run(hsm: hsmOptions) { store, action in
            let key = try await store.adopt(keyID, merchantID: merchantID, purpose: purpose)
            action.concerns(key)
            let issuer = purpose == .upstream ? "the processor's" : "Apple's"
            let next = "import its certificate with `paywarden keys import-certificate` (\(issuer))"
            report(key, now: store.now, json: output.json, next: next)
            return "adopted as pending"
        }
    }
}
