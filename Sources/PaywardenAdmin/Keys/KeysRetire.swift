import ArgumentParser
import Foundation
import KeyCustody

struct KeysRetire: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retire",
        abstract: "Retire an active key: it still decrypts, but is no longer current.",
        discussion: "Retire a key once tokens with its publicKeyHash stop arriving; destroy it later."
    )

    @Argument(help: "The key id (or a unique prefix of 6+ hex digits, or a pkcs11: URI with id=).")
    var key: String

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await AdminAction("keys.retire", keyID: key).run(hsm: hsmOptions) { store, action in
            let retired = try await store.retire(key)
            action.concerns(retired)
            report(retired, now: store.now, json: output.json)
            return nil
        }
    }
}

struct KeysDestroy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "destroy",
        abstract: "Destroy a retired or pending key: key, certificate and record are removed from the HSM.",
        discussion: "Irreversible: tokens encrypted to the key can never be decrypted again. Requires --yes."
    )

    @Argument(help: "The key id (or a unique prefix of 6+ hex digits).")
    var key: String

    @Flag(help: "Confirm the destruction.")
    var yes = false

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await AdminAction("keys.destroy", keyID: key).run(hsm: hsmOptions) { store, action in
            guard yes else {
                throw CommandFailure(
                    .refused,
                    "destroying key \(key) is irreversible: tokens encrypted to it can never be decrypted again; repeat with --yes")
            }
            let destroyed = try await store.destroy(key)
            action.concerns(destroyed)
            if output.json {
                try printJSON(["destroyed": destroyed.id.hex])
            } else {
                print("destroyed key \(destroyed.id) (\(destroyed.merchantID ?? "?"))")
            }
            return nil
        }
    }
}
