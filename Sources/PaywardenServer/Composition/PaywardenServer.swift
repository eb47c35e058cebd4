import ApplePay
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import KeyCustody
import Logging
import MerchantTokens
import NIOCore
import NIOSSL
import OutboundTLS
import PKCS11
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenServices
import PaywardenStorage
import ProcessorMessages
import ProcessorRelays
import ServiceLifecycle
import Synchronization
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

    /// Opens the HSM (probing its paths) and prepares the service; nothing listens yet.
    public static func make(_ configuration: ServerConfiguration, logger: Logger = Logger(label: "paywarden")) async throws
        -> PaywardenServer
    {
        if configuration.apiKeys.keys.isEmpty {
            logger.warning(
                "no API keys configured: every authenticated request will be refused (set \(SettingCatalog.apiKeys.environmentName))")
        }
        if !configuration.certificateIssuers.arePinned {
            logger.warning(
                """
                merchant certificates are checked against \(configuration.certificateIssuers.source), not Apple's pinned WWDR CAs: \
                for tests and sandboxes only; unset \(SettingCatalog.certificateIssuers.environmentName) in production
                """)
        }
        if !configuration.trustAnchors.isApple {
            logger.warning(
                """
                token signatures are checked against \(configuration.trustAnchors.source), not Apple's pinned root: for tests and \
                sandboxes only; unset \(SettingCatalog.trustRoots.environmentName) in production
                """)
        }
        var hsmConfiguration = configuration.hsm
        let tracing: (any Service)?
        let metrics = ServerMetrics()
        metrics.prepareHSMOperations(HSMOperationRecord.operations)
        if let tracingConfiguration = configuration.tracing {
            tracing = try TracingBootstrap.start(tracingConfiguration, logger: logger)
            hsmConfiguration.operationObserver = { record in
                metrics.hsmOperation(record)
                HSMOperationEvents.observer(record)
            }
        } else {
            tracing = nil
            hsmConfiguration.operationObserver = { metrics.hsmOperation($0) }
        }
        let auditShipping = configuration.auditSyslog.map { auditSyslog($0, metrics: metrics, logger: logger) }
        if let auditShipping, let failure = auditShipping.openNow() {
            throw ServerStartError(
                "\(SettingCatalog.auditSyslog.environmentName) is \(auditShipping.destination), where nothing can be sent (\(failure)): "
                    + "correct the setting, or start the syslog daemon first")
        }
        hsmConfiguration.dispatchObserver = { metrics.setDispatch($0.rawValue) }
        hsmConfiguration.inputFailureObserver = { metrics.hsmFailureOnInput(operation: $0) }
        let hsm: HSM
        do {
            hsm = try await HSM.open(hsmConfiguration, logger: logger)
        } catch {
            throw ServerStartError(OperatorAdvice.describe(error))
        }
        let database: DatabaseConnection
        do {
            database = try DatabaseConnection.open(configuration.database, serving: true, logger: logger)
        } catch {
            await hsm.close()
            throw ServerStartError("the database cannot be opened: \(error)")
        }
        if case .memory = configuration.database.location {
            logger.warning(
                """
                the database is this process's memory (memory:): replay protection ends with the process and is not shared \
                with other instances; use it for tests only
                """)
        }
        metrics.setPaths(ecdh: hsm.capabilities.ecdhPath?.rawValue, rsa: hsm.capabilities.rsaDecryptionPath?.rawValue)
        metrics.setDispatch(hsm.dispatch.rawValue)
        metrics.setDecryptableVersions(HSMPaymentKeys.decryptableVersions(hsm))
        metrics.setVaultUsable(hsm.dataProtectionGaps.isEmpty)
        metrics.readPendingHSMOperations(limit: hsm.configuration.maxPendingOperations) { hsm.pendingOperations }
        for (version, gap) in HSMPaymentKeys.undecryptableVersions(hsm) {
            logger.warning("this HSM cannot decrypt \(version.rawValue) tokens: \(gap)")
        }
        let databaseHealth = DatabaseHealthService(database: database.database, metrics: metrics, logger: logger)
        let keys = MerchantKeyStore(hsm: hsm, records: database.keyRecords, certificateIssuers: configuration.certificateIssuers)
        let decryption = DecryptionService(
            hsm: hsm, store: keys,
            verification: TokenSignatureVerifier(anchors: configuration.trustAnchors, signingTimeWindow: configuration.signingTimeWindow),
            maxInFlight: configuration.maxInFlight, recycleEvery: configuration.recycleEvery, metrics: metrics, database: databaseHealth,
            readiness: HSMReadiness(metrics: metrics, logger: logger), logger: logger)
        let maintenance = HSMMaintenanceService(
            decryption: decryption, metrics: metrics, refreshInterval: configuration.keyRefreshInterval, logger: logger
        )
        let audit: AuditLog?
        do {
            audit = try await auditTrail(configuration, hsm: hsm, shipping: auditShipping, logger: logger)
        } catch {
            await hsm.close()
            throw ServerStartError(error.message)
        }
        let keyring = VaultKeyring(hsm: hsm)
        let vaultCore = CardVault(
            database: database.database, keyring: keyring, policy: configuration.vaultPolicy, clock: configuration.vaultClock)
        let vault = VaultService(
            vault: vaultCore, decryption: decryption, metrics: metrics, audit: audit,
            logger: logger)
        let vaultMaintenance = VaultMaintenanceService(
            vault: vaultCore, database: databaseHealth, metrics: metrics, interval: configuration.vaultMaintenanceInterval, logger: logger)
        let notificationSources: NotificationSources
        do {
            notificationSources = try configuration.merchantTokens.notificationSources()
        } catch {
            await hsm.close()
            throw ServerStartError(error.message)
        }
        metrics.prepareAppleRequests(AppleGatewayClient.operations)
        metrics.preparePaymentSessionFailures(AppleGatewayError.Code.allCases.map(\.rawValue))
        let appleGateway = AppleGatewayClient(
            hsm: hsm, keys: keys, configuration: configuration.merchantTokens.gateway, logger: logger,
            requestObserver: { metrics.appleRequest(operation: $0, outcome: $1.rawValue) })
        let merchantTokens = MerchantTokenService(
            gateway: appleGateway,
            vault: vaultCore, events: database.database, keys: keys, policy: configuration.merchantTokens.eventPolicy, metrics: metrics,
            audit: audit, logger: logger,
            usageInformation: configuration.merchantTokens.publicURL.map {
                UsageInformationConfiguration(store: database.database, senderKeys: SenderKeys(hsm: hsm), publicURL: $0)
            })
        let merchantTokenEvents = MerchantTokenEventService(
            merchantTokens: merchantTokens, database: databaseHealth, pollInterval: configuration.merchantTokens.pollInterval)
        // The same client (its connections released by the merchant-token service when it stops).
        let webMerchants = WebMerchantService(
            gateway: appleGateway, store: database.database, integratorID: configuration.merchantTokens.platformIntegratorID,
            domainCheck: DomainChallengeFetcher(configuration: configuration.webMerchantDomainCheck),
            audit: audit, logger: logger, clock: configuration.vaultClock)
        let relay = RelayService(configuration: configuration.relay, hsm: hsm, keys: keys, metrics: metrics, logger: logger)
        for upstream in configuration.relay.all {
            logger.info(
                "processor upstream configured",
                metadata: ["format": "\(upstream.format.rawValue)", "url": "\(upstream.baseURL.absoluteString)"])
            if upstream.clientKey != nil {
                // Still accepted, so existing deployments start; the warning says what to do instead.
                logger.warning(
                    """
                    the \(upstream.format.rawValue) upstream's TLS client key is a PEM file \
                    (\(RelayConfiguration.clientSettings(upstream.format).key.environmentName)): a key on disk can be copied by whoever \
                    reads the file; move it into the HSM (`paywarden keys create --purpose upstream`, or `paywarden keys import \
                    --purpose upstream`) and name its key id there
                    """)
            }
        }
        return PaywardenServer(
            configuration: configuration, hsm: hsm, metrics: metrics, database: database, decryption: decryption,
            maintenance: maintenance, databaseHealth: databaseHealth, vault: vaultCore, vaultService: vault,
            vaultMaintenance: vaultMaintenance,
            merchantTokens: merchantTokens, merchantTokenEvents: merchantTokenEvents, notificationSources: notificationSources,
            relay: relay, webMerchants: webMerchants, tracing: tracing, audit: audit,
            drain: ShutdownDrain(period: configuration.shutdownDrain, deadline: configuration.shutdownDeadline, logger: logger),
            logger: logger)
    }

    /// The audit trail, its lines sealed into this server's chain under the HSM's audit keys (made
    /// on first use). An HSM that cannot compute HMAC-SHA256 leaves it unsealed, with a warning:
    /// a capability gap is no reason to stop payments, and `audit verify` names every unsealed line.
    /// Any other failure to find or make the keys stops the start: the HSM answered its probe, so
    /// it is a permission or a setting to mend, which an unsealed trail would hide.
    private static func auditTrail(
        _ configuration: ServerConfiguration, hsm: HSM, shipping: AuditSyslog?, logger: Logger
    ) async throws(CustodyError) -> AuditLog? {
        guard let path = configuration.auditLogPath else { return nil }
        let log = AuditLog(path: path, syslog: shipping)
        if let gap = hsm.capabilityGap(.hmacSHA256) {
            logger.warning("the audit trail is written unsealed: \(gap)")
            return log
        }
        let chain = try await AuditChain.open(hsm) { reason in
            logger.error("an audit line was written unsealed", metadata: ["reason": "\(reason)"])
        }
        logger.info("audit trail sealed in the HSM", metadata: ["writer": "\(chain.writer)", "signing_key": "\(chain.keys.signing)"])
        return log.sealed(by: chain)
    }

    /// Ships audit lines to `destination`; a line not shipped is counted
    /// (`paywarden_audit_syslog_failures_total`) and logged, at most once a minute with the count since.
    private static func auditSyslog(_ destination: SyslogDestination, metrics: ServerMetrics, logger: Logger) -> AuditSyslog {
        let unlogged = Mutex<(count: Int, lastLogged: ContinuousClock.Instant?)>((0, nil))
        return AuditSyslog(destination: destination) { reason in
            metrics.auditSyslogFailure()
            let now = ContinuousClock.now
            let count: Int? = unlogged.withLock { state in
                state.count += 1
                if let last = state.lastLogged, now - last < .seconds(60) { return nil }
                defer { state = (0, now) }
                return state.count
            }
            if let count {
                logger.warning(
                    "audit lines are not reaching syslog; the audit file still has them",
                    metadata: ["lines": "\(count)", "reason": "\(reason)"])
            }
        }
    }

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

    // MARK: Routes

    private func apiRouter(includingOperations: Bool) -> Router<PaywardenRequestContext> {
        let router = Router(context: PaywardenRequestContext.self)
        // Outside the observation middleware, so its request line carries the span's ids.
        if tracing != nil { router.middlewares.add(RequestTracingMiddleware(trustedCallers: configuration.traceContextSources)) }
        router.middlewares.add(RequestObservationMiddleware(metrics: metrics))
        if includingOperations { addOperationsRoutes(to: router) }
        let decrypt = DecryptController(
            service: decryption, vault: vaultService, metrics: metrics, maxBodyBytes: configuration.maxBodyBytes)
        keyedGroup("/v1/payment-tokens", scope: .decrypt, in: router)
            .post("/decrypt", use: decrypt.decrypt)
        addVaultRoutes(to: router)
        addMerchantTokenRoutes(to: router)
        return router
    }

    /// Routes under `path` for a bearer API key with `scope`: the authenticator identifies, the
    /// requirement authorises (401 without a valid key, 403 without the scope).
    func keyedGroup(
        _ path: RouterPath, scope: APIScope, in router: Router<PaywardenRequestContext>
    ) -> RouterGroup<PaywardenRequestContext> {
        router.group(path)
            .add(middleware: BearerAPIKeyAuthenticator(registry: configuration.apiKeys))
            .add(middleware: APIScopeRequirement(scope: scope))
    }

    private func addMerchantTokenRoutes(to router: Router<PaywardenRequestContext>) {
        // No API key: Apple's notification is gated by its source address instead.
        let notifications = MerchantTokenNotificationController(service: merchantTokens, sources: notificationSources)
        router.get("/v1/apple-pay/{merchantId}/notification/merchantToken/{eventId}", use: notifications.notify)
        let session = PaymentSessionController(
            service: merchantTokens, maxBodyBytes: configuration.maxBodyBytes, webMerchants: webMerchants)
        keyedGroup("/v1/apple-pay", scope: .session, in: router)
            .post("/payment-session", use: session.create)
        let calls = MerchantTokensController(service: merchantTokens, maxBodyBytes: configuration.maxBodyBytes)
        keyedGroup("/v1/merchant-tokens", scope: .merchantTokens, in: router)
            .post("/unlink", use: calls.unlink)
            .post("/notification-url", use: calls.updateNotificationURL)
        addWebMerchantRoutes(to: router)
        addUsageInformationRoutes(to: router)
    }

    private func addWebMerchantRoutes(to router: Router<PaywardenRequestContext>) {
        // Apple fetches the domain-verification file with no credentials, for any registered host.
        let domainAssociation = DomainAssociationController(service: webMerchants)
        router.get("/.well-known/apple-developer-merchantid-domain-association", use: domainAssociation.serve)
        let controller = WebMerchantsController(service: webMerchants, maxBodyBytes: configuration.maxBodyBytes)
        keyedGroup("/v1/apple-pay/web-merchants", scope: .platform, in: router)
            .post(use: controller.register)
            .get(use: controller.list)
            .get("/{id}", use: controller.show)
            .post("/{id}/unregister", use: controller.unregister)
        keyedGroup("/v1/apple-pay/web-merchant-domains", scope: .platform, in: router)
            .get(use: controller.domains)
    }

    private func addVaultRoutes(to router: Router<PaywardenRequestContext>) {
        let eProtect = EProtectController(
            service: vaultService, perPaypage: RateLimiter(ratePerSecond: configuration.eProtectRatePerPaypage),
            perAddress: RateLimiter(ratePerSecond: configuration.eProtectRatePerAddress), clients: notificationSources.clients,
            maxBodyBytes: configuration.maxBodyBytes)
        router.post("/eProtect/paypage", use: eProtect.register)
        let controller = VaultController(service: vaultService)
        keyedGroup("/v1/registrations", scope: .redeem, in: router)
            .post("/redeem", use: controller.redeemFromBody)
            .post("/end", use: controller.endRegistrationFromBody)
            .post("/{id}/redeem", use: controller.redeem)
            .delete("/{id}", use: controller.endRegistration)
        keyedGroup("/v1/tokens", scope: .detokenize, in: router)
            .post("/detokenize", use: controller.detokenizeFromBody)
            .post("/delete", use: controller.deleteTokenFromBody)
            .post("/{token}/detokenize", use: controller.detokenize)
            .delete("/{token}", use: controller.deleteToken)
        let cnpRelay = relay.cnp.map {
            CnpRelay(service: vaultService, upstream: $0, merchantIDs: configuration.relay.cnpMerchantIDs, logger: logger)
        }
        let cnp = CnpController(
            intake: CardIntake(service: vaultService, form: CnpRelay.form), registry: configuration.apiKeys,
            maxBodyBytes: configuration.maxBodyBytes, relay: cnpRelay)
        // The processors' formats answer a missing or wrong key in their own shapes: the
        // authenticators identify, and each controller authorises.
        let bearer = BearerAPIKeyAuthenticator<PaywardenRequestContext>(registry: configuration.apiKeys)
        router.group().add(middleware: bearer)
            .post("/vap/communicator/online", use: cnp.online)
            .post("/cnpAPI", use: cnp.online)
        let mercuryPayRelay = relay.mercuryPay.map {
            MercuryPayRelay(
                service: vaultService, upstream: $0, fields: configuration.relay.mercuryPayFields,
                organizations: configuration.relay.mercuryPayOrganizations)
        }
        let mercuryPay = MercuryPayController(maxBodyBytes: configuration.maxBodyBytes, relay: mercuryPayRelay)
        router.group().add(middleware: bearer).add(middleware: BasicAPIKeyAuthenticator(registry: configuration.apiKeys))
            .post(RouterPath(MercuryPayOperation.saleByRecordNo.path), use: mercuryPay.saleByRecordNo)
            .post(RouterPath(MercuryPayOperation.authorizeByRecordNo.path), use: mercuryPay.authorizeByRecordNo)
        let radial = RadialController(
            relay: RadialRelay(
                service: vaultService, upstream: relay.radial, storeIDs: configuration.relay.radialStoreIDs,
                apiKey: configuration.relay.radialAPIKey, logger: logger),
            maxBodyBytes: configuration.maxBodyBytes)
        router.group("/v1.0/stores/{StoreID}/payments").add(middleware: bearer)
            .post("/decryptblob", use: radial.decryptBlob)
            .post("/creditcard/auth/DW.xml", use: radial.authorize)
    }

    private func operationsRouter() -> Router<PaywardenRequestContext> {
        let router = Router(context: PaywardenRequestContext.self)
        router.middlewares.add(RequestObservationMiddleware(metrics: metrics))
        addOperationsRoutes(to: router)
        return router
    }

    private func addOperationsRoutes(to router: Router<PaywardenRequestContext>) {
        let maintenance = self.maintenance
        let drain = self.drain
        let operations = OperationsController(
            readiness: { drain.isDraining ? maintenance.readiness().shuttingDown() : maintenance.readiness() }, metrics: metrics)
        router.get("/healthz", use: operations.health)
        router.get("/readyz", use: operations.readiness)
        router.get("/metrics", use: operations.metrics)
    }

    private func application(
        router: Router<PaywardenRequestContext>, address: ListenAddress, tls: ServerSettings.TLS?, services: [any Service],
        onRunning: @escaping @Sendable (Int) async -> Void
    ) throws -> Application<RouterResponder<PaywardenRequestContext>> {
        let drain = self.drain
        metrics.prepareRoutes(router.routes.map { (method: $0.method.rawValue, route: "\($0.path)") })
        return try Self.application(
            router: router, address: address, tls: tls, configuration: configuration, services: services, onRunning: onRunning,
            closingConnections: { drain.isDraining }, logger: logger)
    }

    /// Every listener's server: HTTP/1.1 (in TLS when configured) with the idle timeout, the
    /// request read timeout, the requests per connection, the connections per client and the
    /// connection cap of `configuration`.
    static func application(
        router: Router<PaywardenRequestContext>, address: ListenAddress, tls: ServerSettings.TLS?, configuration: ServerConfiguration,
        services: [any Service], onRunning: @escaping @Sendable (Int) async -> Void,
        closingConnections: @escaping @Sendable () -> Bool = { false }, logger: Logger
    ) throws -> Application<RouterResponder<PaywardenRequestContext>> {
        // A connection that sends nothing for the idle timeout is closed, and a request that has not
        // arrived whole within the read timeout is answered 408 and closed (slowloris, trickled
        // bodies); the connection cap makes further ones wait, unserved, and the per-client share
        // keeps one client from taking every slot.
        let rules = ConnectionRules(
            idleTimeout: TimeAmount(configuration.idleTimeout), readTimeout: TimeAmount(configuration.requestReadTimeout),
            maxRequestsPerConnection: configuration.maxRequestsPerConnection, closingConnections: closingConnections,
            connections: ConnectionsPerClient(
                limit: configuration.maxConnectionsPerClient, clients: try configuration.merchantTokens.notificationSources().clients))
        let http1 = HTTPServerBuilder { responder in GuardedHTTP1Channel(responder: responder, rules: rules) }
        let server: HTTPServerBuilder = if let tls { try .tls(http1, tlsConfiguration: ServerTLS.configuration(tls)) } else { http1 }
        return Application(
            router: router, server: server,
            configuration: .init(
                address: .hostname(address.host, port: address.port), serverName: "paywarden",
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections, logger: logger)),
            services: services,
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }
}
