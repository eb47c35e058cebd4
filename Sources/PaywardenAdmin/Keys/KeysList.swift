import ArgumentParser
import Foundation
import KeyCustody

struct KeysList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List merchant keys: id, purpose, type, merchant, state, publicKeyHash, expiry, warnings.",
        discussion:
            "Warns 30, 15 and 7 days before a certificate expires (Apple's reminder schedule) and for keys pending more than 7 days."
    )

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await AdminAction("keys.list", mutates: false).run(hsm: hsmOptions) { store, _ in
            let now = store.now
            let inventory = try await store.inventory()
            let inUse = try await store.upstreamKeysInUse()
            let views = inventory.keys.map { KeyView($0, now: now, inUse: inUse) }
            if output.json {
                try printJSON(views)
                return "\(views.count) keys"
            }
            if views.isEmpty, inventory.unadopted.isEmpty {
                print("no merchant keys; create one with `paywarden keys create --merchant-id ID`")
            }
            for view in views {
                print(view.line)
                for warning in view.warnings { print("  warning: \(warning)") }
            }
            for key in inventory.unadopted {
                print(
                    "\(key.id.hex)  in the HSM, no record in this database  \(key.key.algorithm == .ecP256 ? "ec" : "rsa")  "
                        + "publicKeyHash=\(key.publicKeyHash)  label \"\(key.key.label)\"")
            }
            if !inventory.unadopted.isEmpty {
                print(
                    "  keys without a record were made with another database (copy it: `paywarden db copy`) or belong to another "
                        + "application; `paywarden keys adopt KEY_ID --merchant-id M --purpose P` gives one a record")
            }
            return "\(views.count) keys, \(inventory.unadopted.count) without a record"
        }
    }
}
