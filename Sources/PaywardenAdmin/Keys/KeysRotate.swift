import ArgumentParser
import Foundation
import KeyCustody

struct KeysRotate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Create the successor of a merchant's current processing key, and its CSR.",
        discussion: """
            The current key stays active: Apple keeps sending tokens encrypted to it for a while after the new \
            certificate is activated. Retire it once its publicKeyHash stops arriving.
            """
    )

    @Option(name: .customLong("merchant-id"), help: "The Apple merchant identifier.")
    var merchantID: String

    @Option(name: .customLong("csr-out"), help: "Where to write the PEM CSR (- for stdout).")
    var csrOut: String?

    @Flag(
        name: .customLong("allow-unusable"),
        help: "Make the successor even though this HSM cannot decrypt with it (to prepare keys before an HSM upgrade); warns.")
    var allowUnusable = false

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await AdminAction("keys.rotate", merchantID: merchantID).run(hsm: hsmOptions) { store, action in
            let current = try await store.currentProcessingKey(merchantID: merchantID)
            try await UnusableKeyRefusal.check(
                store.hsm, algorithm: current.key.algorithm, purpose: .processing, signsItsCSR: true, allowUnusable: allowUnusable)
            let (successor, csr, _) = try await store.rotate(merchantID: merchantID)
            action.concerns(successor)
            let path = try CSRFile.write(csr, to: csrOut, home: action.home, merchantID: merchantID, key: successor)
            report(
                successor, csrPath: path, now: store.now, json: output.json,
                next: "upload the CSR to Apple and import the certificate; key \(current.id) stays active until you retire it")
            return "successor of \(current.id.hex)"
        }
    }
}
