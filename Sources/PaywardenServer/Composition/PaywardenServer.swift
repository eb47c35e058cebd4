import Foundation
import Hummingbird
import HummingbirdTLS
import KeyCustody
import Logging
import MerchantTokens
import PKCS11
import PaywardenDatabase
import PaywardenServices
import ProcessorRelays
import ServiceLifecycle
import Vault

/// The composition root of `paywarden serve`: opens the HSM, builds the services, the routes, TLS
/// and the listeners from a configuration, and runs them until a termination signal, finishing
/// in-flight requests before it stops.
public struct PaywardenServer: Sendable {
    public let configuration: ServerConfiguration
    public let hsm: HSM
    public let metrics: ServerMetrics
    public let database: DatabaseConnection
    let decryption: DecryptionService
    let maintenance: HSMMaintenanceService
    let databaseHealth: DatabaseHealthService
    /// The vault this server serves (paypages, registrations, tokens), for admin work in process.
    public let vault: CardVault
    let vaultService: VaultService
    let vaultMaintenance: VaultMaintenanceService
    let merchantTokens: MerchantTokenService
    let merchantTokenEvents: MerchantTokenEventService
    let notificationSources: NotificationSources
    let relay: RelayService
    let webMerchants: WebMerchantService
    /// Exports finished spans when tracing is on (`PAYWARDEN_TRACING`).
    let tracing: (any Service)?
    /// The audit trail every service of this server writes to (``ServerConfiguration/auditLogPath``).
    let audit: AuditLog?
    /// The period between SIGTERM and closing the listeners (``run()``).
    let drain: ShutdownDrain
    let logger: Logger

    /// Before the API listens: the schema is checked (and migrated when allowed), which is also
    /// the first round trip; a failure stops the start with the reason.
    private func prepareDatabase() async throws {
        do {
            let applied = try await database.prepareSchema(migratingAutomatically: configuration.database.autoMigrate)
            if !applied.isEmpty {
                logger.notice("database migrated", metadata: ["driver": "\(database.database.driver)", "applied": "\(applied)"])
            }
        } catch {
            throw ServerStartError("the \(database.database.driver) database at \(database.database.location) cannot be used: \(error)")
        }
        databaseHealth.started()
        // The key map needs the key records, which the database holds once migrated.
        await maintenance.databaseIsPrepared()
        // So do the upstream client keys' certificates; a key that is not usable stops the start.
        try await relay.prepareClientKeys()
        await prepareVaultKeys()
    }

    /// The vault's keys: read from the HSM, and the first of each purpose generated when the HSM
    /// has none (a new deployment), which the audit log records. Without them the vault routes
    /// answer 503 (501 `hsm_capability_missing` on an HSM that can never hold them) and the log
    /// says why; decryption does not need them.
    private func prepareVaultKeys() async {
        let keyring = vault.keyring
        do {
            for key in try await keyring.createMissing() {
                logger.notice("vault key generated in the HSM", metadata: ["purpose": "\(key.purpose.rawValue)", "key": "\(key.id)"])
                try? await audit?.append(
                    AuditLog.Record(
                        time: Date(), user: AuditLog.currentUser, action: "vault-key-create", keyID: key.id.hex, merchantID: nil,
                        result: "ok", detail: "first \(key.purpose.rawValue) key, generated at start-up"))
            }
        } catch  where error.code == .hsmCapabilityMissing {
            logger.warning(
                "the vault cannot run on this HSM; its routes answer 501 hsm_capability_missing and decryption is unaffected",
                metadata: ["error": "\(error.message)"])
        } catch {
            logger.error("the vault keys are not usable; vault routes answer 503 until they are", metadata: ["error": "\(error)"])
        }
    }

    /// Merchant-token events and the calls to Apple, for admin work in process.
    public var merchantTokenService: MerchantTokenService { merchantTokens }
    /// The web merchants this server registers with Apple, for admin work in process.
    public var webMerchantService: WebMerchantService { webMerchants }

    /// Whether the HSM is logged in and the key map loaded.
    public var isReady: Bool { maintenance.isReady }

    /// The ports the listeners bound, reported once each is up.
    public struct BoundPorts: Sendable {
        public var api: Int
        /// The operations listener's port, or nil when operations share the API listener.
        public var operations: Int?
    }

    /// The services to run: the API listener (and the operations listener when one is
    /// configured), with the maintenance service. `onListening` is told each bound port.
    public func services(onListening: @escaping @Sendable (Listener, Int) async -> Void = { _, _ in }) throws -> [any Service] {
        let separateOperations = configuration.operationsListen != nil
        // The database's services (PostgreSQL's pool) come first, so they stop last; the span
        // exporter before them, so it sends the spans of everything that stopped after it.
        var api = try application(
            router: apiRouter(includingOperations: !separateOperations), address: configuration.listen, tls: configuration.tls,
            services: (tracing.map { [$0] } ?? []) + database.services
                + [databaseHealth, maintenance, vaultMaintenance, merchantTokenEvents, relay]
                + (audit.map { [AuditCheckpointService(audit: $0, interval: configuration.auditCheckpointInterval, logger: logger)] }
                    ?? []),
            onRunning: { await onListening(.api, $0) }
        )
        api.beforeServerStarts { try await prepareDatabase() }
        guard let operationsAddress = configuration.operationsListen else { return [api] }
        // Operational routes answer without TLS or keys, on an address only the platform reaches.
        let operations = try application(
            router: operationsRouter(), address: operationsAddress, tls: nil, services: [],
            onRunning: { await onListening(.operations, $0) }
        )
        return [api, operations]
    }

    public enum Listener: String, Sendable {
        case api
        case operations
    }

    /// Serves until SIGTERM or SIGINT, then drains (``ShutdownDrain``: not ready, still serving),
    /// closes the listeners, finishes in-flight requests within the deadline and closes the HSM.
    /// SIGHUP opens the audit log again (after logrotate moved it).
    public func run() async throws {
        let hangUp = Self.reopenAuditLogOnHangUp()
        defer { hangUp.cancel() }
        do {
            let services = try services { listener, port in
                logger.info("listening", metadata: ["listener": "\(listener)", "port": "\(port)"])
            }
            // Last, so the graceful shutdown (services in reverse order, each awaited) drains first;
            // the drain also keeps the deadline.
            let group = ServiceGroupConfiguration(
                services: services + [drain], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            try await ServiceGroup(configuration: group).run()
        } catch {
            await closeAuditChain()
            await hsm.close()
            throw error
        }
        await closeAuditChain()
        await hsm.close()
    }

    /// This server's chain through the audit trail, when its lines are sealed.
    public var auditChain: AuditChain? { audit?.chain }

    /// The final checkpoint of this server's audit chain, once nothing writes to it any more
    /// (``run()`` writes it before it closes the HSM).
    public func closeAuditChain() async {
        do {
            try await audit?.checkpoint(final: true)
        } catch {
            logger.error(
                "the audit chain's final checkpoint could not be written; audit verify will call it cut", metadata: ["error": "\(error)"])
        }
    }

    private static func reopenAuditLogOnHangUp() -> any DispatchSourceSignal {
        signal(SIGHUP, SIG_IGN)  // the source sees it; the default action would end the process
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        source.setEventHandler { AuditLog.reopenAll() }
        source.resume()
        return source
    }
}
