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
            let views = try await store.list().map { KeyView($0, now: now) }
            if output.json {
                try printJSON(views)
            } else if views.isEmpty {
                print("no merchant keys; create one with `paywarden keys create --merchant-id ID`")
            } else {
                for view in views {
                    print(view.line)
                    for warning in view.warnings { print("  warning: \(warning)") }
                }
            }
            return "\(views.count) keys"
        }
    }
}
