import Foundation
import PaywardenConfiguration
import PaywardenSandbox
import PaywardenServices
import SwiftASN1
import X509

extension AdminTestEnvironment {
    /// `paywarden serve` as the operator who ran the admin commands starts it: the same home (its
    /// SQLite database, the keys the commands made) and token, `settings` added (another module,
    /// say); the test PKI's root as the trust anchor, one decrypting API key.
    public func serve(_ settings: [String: String] = [:]) async throws -> ServeProcess {
        typealias C = SettingCatalog
        let (apiKey, entry) = APIKey.generate(name: "payments", scopes: [.decrypt])
        var environment = cli.environment.merging(settings) { $1 }
        environment[C.trustRoots.environmentName] = try DecryptionTestEnvironment.sharedPKI.writeRoot(to: home)
        environment[C.apiKeys.environmentName] = entry
        environment[C.shutdownDrainSeconds.environmentName] = "0"
        let port = try TestPostgres.freePort()
        return try await ServeProcess.launch(environment: environment, port: port, apiKey: apiKey, log: home + "/serve-\(port).log")
    }
}

extension AdminTestEnvironment {
    /// A key that `keys create` made and `keys import-certificate` certified, as an operator does
    /// with Apple's certificate.
    public struct CertifiedKey: Sendable {
        /// The key's SubjectPublicKeyInfo (DER), from its CSR.
        public let subjectPublicKeyInfo: Data
        /// What `keys create` wrote to stderr (its warnings).
        public let creationStderr: String
    }

    /// `keys create` of a processing key for `merchant` with `environment` and `options`, its CSR
    /// certified by `ca` and imported. Throws when either command fails.
    public func certifiedProcessingKey(
        _ merchant: String, type: String, by ca: TestCertificateAuthority, environment: [String: String], options: [String] = []
    ) throws -> CertifiedKey {
        let name = "\(type)-\(UUID().uuidString.prefix(6))"
        let csrPath = home + "/\(name).csr"
        let created = try paywarden(
            ["keys", "create", "--merchant-id", merchant, "--type", type, "--csr-out", csrPath] + options, environment: environment)
        guard created.status == 0 else { throw CommandFailed("keys create --type \(type)", created) }
        let csr = try String(contentsOfFile: csrPath, encoding: .utf8)
        let certificate = try write(try ca.issue(csrPEM: csr, merchantID: merchant, purpose: .processing), named: name + ".cer")
        let imported = try paywarden("keys", "import-certificate", certificate, environment: environment)
        guard imported.status == 0 else { throw CommandFailed("keys import-certificate", imported) }
        var serializer = DER.Serializer()
        try serializer.serialize(try CertificateSigningRequest(pemEncoded: csr).publicKey)
        return CertifiedKey(subjectPublicKeyInfo: Data(serializer.serializedBytes), creationStderr: created.stderr)
    }

    /// A command that exited with a status other than 0.
    public struct CommandFailed: Error, CustomStringConvertible {
        public let description: String
        init(_ command: String, _ output: PaywardenProcess.Output) {
            description = "paywarden \(command) exited with \(output.status): \(output.stderr.suffix(2000))"
        }
    }
}
