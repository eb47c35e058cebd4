import Foundation
import PaywardenConfiguration
import PaywardenServices

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
