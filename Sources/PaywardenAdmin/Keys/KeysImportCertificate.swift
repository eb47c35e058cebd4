import ArgumentParser
import Foundation
import KeyCustody

struct KeysImportCertificate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-certificate",
        abstract: "Import the certificate Apple (or, for an upstream key, the processor) issued (DER .cer or PEM) and activate its key.",
        discussion: """
            The certificate is stored beside the key it was issued for. Apple's certificates must come from Apple's WWDR CAs; \
            an upstream key's certificate comes from the processor's CA, which is not pinned: it must be a TLS client \
            certificate for the key and valid now.
            """
    )

    @Argument(help: "The certificate file, or - for standard input.")
    var file: String

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await AdminAction("keys.import-certificate").run(hsm: hsmOptions) { store, action in
            let certificate = try MerchantCertificate(bytes: InputFile.read(file, what: "certificate"))
            action.merchantID = certificate.merchantID
            let (key, outcome) = try await store.importCertificate(certificate)
            action.concerns(key)
            // Upstream certificates are not checked against Apple's issuers, pinned or not.
            if outcome == .activated, key.purpose != .upstream { CertificateIssuerWarning.report(store) }
            if outcome == .alreadyImported, !output.json {
                FileHandle.standardError.write(
                    Data("paywarden: this certificate was already imported for key \(key.id); nothing changed\n".utf8))
            }
            report(key, now: store.now, json: output.json)
            return outcome == .alreadyImported ? "already imported" : "activated"
        }
    }
}

/// Reads a file an admin names, or standard input for "-".
enum InputFile {
    static func read(_ path: String, what: String) throws -> [UInt8] {
        if path == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure(.refused, "cannot read the \(what) file \(path)")
        }
        return Array(data)
    }
}
