import ArgumentParser
import Foundation
import KeyCustody

struct KeysCreate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Generate a merchant or upstream key in the HSM and write its CSR, signed by the HSM.",
        discussion: """
            The key stays pending until its certificate (Apple's, or for --purpose upstream the processor's) is imported with \
            `paywarden keys import-certificate`.
            """
    )

    @Option(
        name: .customLong("merchant-id"),
        help: "The Apple merchant identifier, e.g. merchant.com.example (for an upstream key: a name for it, the CSR's subject UID).")
    var merchantID: String

    @Option(help: "ec (P-256, default for processing) or rsa (RSA-2048: China processing keys, identity keys).")
    var type: KeyAlgorithmChoice?

    @Option(help: "processing (default), identity (TLS to Apple) or upstream (TLS client key for a processor upstream).")
    var purpose: KeyPurpose = .processing

    @Option(
        name: .customLong("csr-out"), help: "Where to write the PEM CSR (default: MERCHANT-KEYID.csr in the Paywarden home; - for stdout).")
    var csrOut: String?

    @Flag(
        name: .customLong("allow-unusable"),
        help: "Make the key even though this HSM cannot use it for its purpose (to prepare keys before an HSM upgrade); warns.")
    var allowUnusable = false

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await AdminAction("keys.create", merchantID: merchantID).run(hsm: hsmOptions) { store, action in
            let algorithm = type ?? purpose.defaultAlgorithm
            try MerchantKeyStore.checkCreation(merchantID: merchantID, purpose: purpose, algorithm: algorithm)
            try await UnusableKeyRefusal.check(
                store.hsm, algorithm: algorithm == .ec ? .ecP256 : .rsa2048, purpose: purpose, signsItsCSR: true,
                allowUnusable: allowUnusable)
            let (key, csr) = try await store.create(merchantID: merchantID, purpose: purpose, algorithm: algorithm)
            action.concerns(key)
            let path = try CSRFile.write(csr, to: csrOut, home: action.home, merchantID: merchantID, key: key)
            report(
                key, csrPath: path, now: store.now, json: output.json,
                next: purpose == .upstream
                    ? "send the CSR to the processor, then run `paywarden keys import-certificate` with the certificate it returns, and "
                        + "name key \(key.id) in the upstream's PAYWARDEN_RELAY_*_UPSTREAM_CLIENT_KEY"
                    : "upload the CSR to Apple, then run `paywarden keys import-certificate` with the certificate Apple returns")
            return path.map { "csr=\($0)" }
        }
    }
}

extension KeyAlgorithmChoice: ExpressibleByArgument {}
extension KeyPurpose: ExpressibleByArgument {}

/// Writes a CSR where the admin asked, or to the default place under the Paywarden home.
enum CSRFile {
    /// Returns the path written, or nil when the CSR went to stdout.
    static func write(_ csr: String, to destination: String?, home: PaywardenHome, merchantID: String, key: MerchantKey) throws -> String? {
        if destination == "-" {
            print(csr, terminator: "")
            return nil
        }
        let path = destination ?? "\(home.path)/\(merchantID)-\(key.id.hex.prefix(8)).csr"
        try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: path, contents: Data(csr.utf8), attributes: [.posixPermissions: 0o644]) else {
            throw CommandFailure(
                .refused, "cannot write the CSR to \(path); the key \(key.id) was created: destroy it or retry with --csr-out")
        }
        return path
    }
}

/// Prints a key that a command created or changed.
func report(_ key: MerchantKey, csrPath: String? = nil, now: Date, json: Bool, next: String? = nil) {
    let view = KeyView(key, now: now)
    if json {
        struct Output: Encodable {
            let key: KeyView
            let csr: String?
        }
        try? printJSON(Output(key: view, csr: csrPath))
        return
    }
    print("key \(view.id)  \(view.purpose) \(view.type)  merchant \(view.merchantId ?? "?")  \(view.state)")
    print("publicKeyHash \(view.publicKeyHash)")
    if let csrPath { print("CSR written to \(csrPath)") }
    for warning in view.warnings { print("warning: \(warning)") }
    if let next { print("next: \(next)") }
}
