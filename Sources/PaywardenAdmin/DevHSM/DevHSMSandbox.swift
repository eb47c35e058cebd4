import ArgumentParser
import Foundation
import KeyCustody
import PKCS11
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenSandbox
import PaywardenServices
import Vault

/// `paywarden dev-hsm sandbox`: a merchant to try everything with, on the development token.
struct DevHSMSandbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sandbox",
        abstract: "Create the sandbox beside the development token (idempotent): a development PKI and a merchant it certified.",
        discussion: """
            In sandbox/ of the development token's directory: a development PKI (an Apple-like token-signing chain, a CA \
            standing in for Apple's WWDR, a server certificate for the tour's stand-ins), the merchant \
            \(Sandbox.merchantID) with an EC and an RSA processing key and a merchant identity key in the HSM, certified by \
            that PKI, organisation \(Sandbox.organization) with paypage \(Sandbox.paypageID) and an API key for its server, \
            and the loopback ports of the stand-ins for Apple and a processor. It writes only into the development token \
            `paywarden dev-hsm init` made (its env file sourced) and its home's database, under a configuration whose only \
            trust is that PKI (the env file names it): any other HSM, database or trust is refused before anything is \
            written. A service started with that env file decrypts the sandbox's tokens (`paywarden dev-hsm sample-token`) \
            and no real Apple Pay token. Never use it outside development.
            """
    )

    @Option(help: "The development token's PKCS#11 implementation: softhsm or nss.")
    var backend: DevelopmentToken.Backend = .softhsm

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    /// What the sandbox has, for `--json`.
    struct Report: Encodable {
        let merchantID: String
        let organization: OrganizationID
        let paypageID: String
        let keys: [String]
        let created: [String]
        let environmentFile: String
    }

    func run() async throws {
        try await AdminAction("dev-hsm.sandbox", merchantID: Sandbox.merchantID).run(hsm: hsmOptions, probeCapabilities: true) {
            hsm, action in
            guard let settings = action.settings else { preconditionFailure("AdminAction reads the settings before its body") }
            var token = DevelopmentToken(home: settings.home, label: settings.hsm.token, modulePath: settings.hsm.modulePath)
            token.backend = backend
            guard FileManager.default.fileExists(atPath: token.environmentFile) else {
                throw CommandFailure(
                    .misconfiguration, "no development token in \(token.directory); run `paywarden dev-hsm init --backend \(backend)` first"
                )
            }
            let layout = Sandbox.Layout(tokenDirectory: token.directory)
            try DevelopmentGuard(settings: settings, token: token, pkiDirectory: layout.pkiDirectory).check(hsm)
            let pki = try DevelopmentPKI.loadOrCreate(in: layout.pkiDirectory)
            var created: [String] = []
            let keys = try await AdminDatabase.with(settings) { connection in
                // Certified by the development PKI's CA whatever the settings say: it is the sandbox's issuer.
                let store = MerchantKeyStore(hsm: hsm, records: connection.keyRecords, certificateIssuers: pki.merchantCA.issuers)
                let keys = try await certifiedKeys(store, pki: pki, created: &created)
                let vault = CardVault(database: connection.database, keyring: VaultKeyring(hsm: hsm))
                try await vault.keyring.refresh()
                let vaultKeys = try await vault.keyring.createMissing()
                created += vaultKeys.map { "vault \($0.summary)" }
                if try await !vault.paypages().contains(where: { $0.id == Sandbox.paypageID }) {
                    _ = try await vault.createPaypage(
                        id: Sandbox.paypageID, organization: Sandbox.organization, merchantIdentifiers: [Sandbox.merchantID],
                        reportGroups: [], tokenFormat: .t)
                    created.append("paypage \(Sandbox.paypageID)")
                }
                return keys
            }
            if try layout.load() == nil {
                // Two different ports: the kernel may hand the same one out again once the first probe closed.
                let applePort = try LoopbackPort.unused()
                var processorPort = try LoopbackPort.unused()
                while processorPort == applePort { processorPort = try LoopbackPort.unused() }
                let sandbox = Sandbox(appleGatewayPort: applePort, processorPort: processorPort)
                try token.write(
                    String(decoding: try JSONEncoder().encode(sandbox), as: UTF8.self) + "\n", to: layout.descriptionFile, mode: 0o600)
                created.append("stand-in ports \(sandbox.appleGatewayPort) (Apple) and \(sandbox.processorPort) (processor)")
            }
            if !FileManager.default.fileExists(atPath: layout.apiKeyFile) {
                let (key, entry) = APIKey.generate(
                    name: "sandbox-server", scopes: [.redeem, .detokenize, .merchantTokens], organization: Sandbox.organization)
                try token.write(key + "\n", to: layout.apiKeyFile, mode: 0o600)
                try token.write(entry + "\n", to: layout.apiKeyEntryFile, mode: 0o600)
                created.append("API key sandbox-server")
            }
            try token.writeEnvironment()
            if output.json {
                try printJSON(
                    Report(
                        merchantID: Sandbox.merchantID, organization: Sandbox.organization, paypageID: Sandbox.paypageID,
                        keys: keys.map { "\($0.id.hex) \($0.purpose.rawValue)" }, created: created, environmentFile: token.environmentFile))
            } else {
                for line in created { print("created \(line)") }
                print("sandbox merchant \(Sandbox.merchantID): \(keys.count) keys, paypage \(Sandbox.paypageID)")
                print("organisation \(Sandbox.organization); its settings are in \(token.environmentFile)")
                print("a sample token: paywarden dev-hsm sample-token --merchant-id \(Sandbox.merchantID)")
            }
            return created.isEmpty ? "already present" : "created " + created.joined(separator: ", ")
        }
    }

    /// The sandbox merchant's active keys, one of each kind, created and certified where missing.
    private func certifiedKeys(_ store: MerchantKeyStore, pki: DevelopmentPKI, created: inout [String]) async throws -> [MerchantKey] {
        let kinds: [(KeyPurpose, KeyAlgorithmChoice)] = [(.processing, .ec), (.processing, .rsa), (.identity, .rsa)]
        var keys: [MerchantKey] = []
        let active = try await store.list().filter { $0.merchantID == Sandbox.merchantID && $0.state == .active }
        // A key whose certificate another (older) development PKI issued, or that is about to expire,
        // is retired and replaced: the stand-ins and the service trust only the current PKI.
        var existing: [MerchantKey] = []
        for key in active {
            if key.certificate.map({ pki.certifies($0.certificate) }) == true {
                existing.append(key)
            } else {
                _ = try await store.retire(key.id.hex)
                created.append("retired \(key.purpose.rawValue) key \(key.id.hex) (not certified by the current development PKI)")
            }
        }
        for (purpose, algorithm) in kinds {
            if let key = existing.first(where: { $0.purpose == purpose && Self.algorithm(of: $0) == algorithm }) {
                keys.append(key)
                continue
            }
            let (pending, csr) = try await store.create(merchantID: Sandbox.merchantID, purpose: purpose, algorithm: algorithm)
            do {
                let certificate = try pki.merchantCA.issue(csrPEM: csr, merchantID: Sandbox.merchantID, purpose: purpose)
                keys.append(try await store.importCertificate(MerchantCertificate(bytes: certificate)).key)
            } catch {
                // Nothing half-made: a key without its certificate is destroyed.
                _ = try? await store.destroy(pending.id.hex)
                throw error
            }
            created.append("\(purpose.rawValue) key (\(algorithm.rawValue)) \(pending.id.hex)")
        }
        return keys
    }

    static func algorithm(of key: MerchantKey) -> KeyAlgorithmChoice {
        if case .rsa = key.key.publicKey { return .rsa }
        return .ec
    }
}
