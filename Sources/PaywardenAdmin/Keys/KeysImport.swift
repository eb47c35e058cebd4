import ArgumentParser
import Foundation
import KeyCustody
import PKCS11
import PaywardenConfiguration

struct KeysImport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Move an existing software key into the HSM, non-extractable from then on.",
        discussion: """
            For processors migrating keys. The key comes from --key (PEM or DER: PKCS#8, SEC1 with or without \
            EC PARAMETERS, PKCS#1) or --pkcs12 (password from --password-file, else \(SettingCatalog.pkcs12Password.environmentName)). \
            The merchant comes from --certificate (or the certificate inside the PKCS#12) or --merchant-id.
            """
    )

    @Option(help: "A PEM or DER private key file.")
    var key: String?

    @Option(help: "A PKCS#12 file (legacy RC2/3DES files included).")
    var pkcs12: String?

    @Option(name: .customLong("password-file"), help: "A file holding the PKCS#12 password.")
    var passwordFile: String?

    @Option(help: "The key's Apple certificate (DER or PEM).")
    var certificate: String?

    @Option(name: .customLong("merchant-id"), help: "The merchant identifier, when there is no certificate.")
    var merchantID: String?

    @Option(help: "processing (default), identity or upstream (a processor upstream's TLS client key, moved from a PEM file).")
    var purpose: KeyPurpose = .processing

    @Flag(name: .customLong("allow-expired-certificate"), help: "Accept an expired certificate (to decrypt old tokens, e.g. for disputes).")
    var allowExpiredCertificate = false

    @Flag(
        name: .customLong("allow-unusable"),
        help: "Import the key even though this HSM cannot use it for its purpose (to prepare keys before an HSM upgrade); warns.")
    var allowUnusable = false

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func validate() throws {
        guard (key == nil) != (pkcs12 == nil) else { throw ValidationError("give exactly one of --key or --pkcs12") }
        if key != nil, passwordFile != nil { throw ValidationError("--password-file goes with --pkcs12") }
    }

    func run() async throws {
        try await AdminAction("keys.import", merchantID: merchantID).run(hsm: hsmOptions) { store, action in
            let source = key ?? pkcs12!
            let software: SoftwarePrivateKey
            if let pkcs12 {
                software = try SoftwarePrivateKey(pkcs12: InputFile.read(pkcs12, what: "PKCS#12"), password: try password(action.settings))
            } else {
                software = try SoftwarePrivateKey(pemOrDER: InputFile.read(source, what: "key"))
            }
            let merchantCertificate = try certificate.map { try MerchantCertificate(bytes: InputFile.read($0, what: "certificate")) }
            let prepared = try await store.prepareImport(
                software, certificate: merchantCertificate, merchantID: merchantID, purpose: purpose,
                allowExpiredCertificate: allowExpiredCertificate)
            try await UnusableKeyRefusal.check(
                store.hsm, algorithm: software.algorithm, purpose: purpose, signsItsCSR: false, allowUnusable: allowUnusable)
            let imported = try await store.importKey(prepared)
            action.concerns(imported)
            if imported.certificate != nil { CertificateIssuerWarning.report(store) }
            report(imported, now: store.now, json: output.json)
            FileHandle.standardError.write(
                Data(
                    """
                    paywarden: warning: \(source) still holds the private key in software. The HSM copy is all Paywarden \
                    needs: destroy the source (e.g. shred -u \(source)) and every backup of it.

                    """.utf8))
            return "imported from \(pkcs12 != nil ? "PKCS#12" : "key file")"
        }
    }

    private func password(_ settings: PaywardenSettings?) throws -> String {
        if let passwordFile {
            guard let password = try SecretFile.read(passwordFile, for: "--password-file") else {
                throw CommandFailure(.refused, "cannot read the password file \(passwordFile) as UTF-8 text")
            }
            return password
        }
        return settings?.pkcs12Password?.revealed ?? ""
    }
}
