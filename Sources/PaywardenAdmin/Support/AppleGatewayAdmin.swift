import KeyCustody
import Logging
import MerchantTokens
import OutboundTLS
import PaywardenConfiguration
import PaywardenStorage
import Vault

/// An admin command that calls Apple: the HSM, the database and Apple's gateway as configured, the
/// gateway shut down however the command ends, and a ``MerchantTokenFailure`` turned into the
/// command's exit status (temporary: unavailable; no platform integrator set: misconfiguration).
/// The admin command's own audit record is the one written.
struct AppleGatewayAdmin {
    struct Context: Sendable {
        let vault: CardVault
        let database: any PaywardenDatabase
        let configuration: MerchantTokenConfiguration
        let keys: MerchantKeyStore
        let gateway: AppleGatewayClient
        let logger: Logger
        let audit: VaultAudit
    }

    let name: String
    let mutates: Bool

    func run(hsm options: HSMOptions, _ body: @Sendable (Context) async throws -> Void) async throws {
        try await VaultAdmin(name, mutates: mutates).run(hsm: options) { vault, settings, audit, database in
            let configuration: MerchantTokenConfiguration
            do throws(ConfigurationError) {
                configuration = try MerchantTokenConfiguration(settings: settings.merchantTokens)
            } catch {
                throw CommandFailure(.misconfiguration, error.message)
            }
            let keys = MerchantKeyStore(hsm: vault.keyring.hsm, records: database)
            let logger = Logger(label: "paywarden")
            let gateway = AppleGatewayClient(hsm: vault.keyring.hsm, keys: keys, configuration: configuration.gateway, logger: logger)
            let context = Context(
                vault: vault, database: database, configuration: configuration, keys: keys, gateway: gateway, logger: logger, audit: audit)
            do {
                try await body(context)
            } catch let failure as MerchantTokenFailure {
                await gateway.shutdown()
                throw CommandFailure(Self.status(of: failure), failure.description)
            } catch {
                await gateway.shutdown()
                throw error
            }
            await gateway.shutdown()
        }
    }

    static func status(of failure: MerchantTokenFailure) -> CommandFailure.Status {
        if failure.isTemporary { return .unavailable }
        return failure.code == .platformIntegratorNotConfigured ? .misconfiguration : .refused
    }
}
