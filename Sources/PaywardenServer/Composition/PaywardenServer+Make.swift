import ApplePay
import KeyCustody
import Logging
import MerchantTokens
import OutboundTLS
import PKCS11
import PaywardenConfiguration
import PaywardenDatabase
import PaywardenPrimitives
import PaywardenServices
import ProcessorRelays
import ServiceLifecycle
import Synchronization
import Vault

extension PaywardenServer {
    /// Opens the HSM (probing its paths) and prepares the service; nothing listens yet. A failure
    /// after the HSM opened closes it here, whichever step failed.
    public static func make(_ configuration: ServerConfiguration, logger: Logger = Logger(label: "paywarden")) async throws
        -> PaywardenServer
    {
        warnAboutDevelopmentSettings(configuration, logger: logger)
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
        do {
            return try await make(configuration, hsm: hsm, metrics: metrics, tracing: tracing, auditShipping: auditShipping, logger: logger)
        } catch {
            await hsm.close()
            throw error
        }
    }

    /// Everything after the HSM: the database, the services over both, the audit trail.
    private static func make(
        _ configuration: ServerConfiguration, hsm: HSM, metrics: ServerMetrics, tracing: (any Service)?, auditShipping: AuditSyslog?,
        logger: Logger
    ) async throws -> PaywardenServer {
        let database: DatabaseConnection
        do {
            database = try DatabaseConnection.open(configuration.database, serving: true, logger: logger)
        } catch {
            throw ServerStartError("the database cannot be opened: \(error)")
        }
        if case .memory = configuration.database.location {
            logger.warning(
                """
                the database is this process's memory (memory:): replay protection ends with the process and is not shared \
                with other instances; use it for tests only
                """)
        }
        report(hsm, to: metrics, logger: logger)
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
        let notificationSources = NotificationSources(allowed: configuration.merchantTokens.allowedSources, clients: configuration.clients)
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
        report(configuration.relay, logger: logger)
        return PaywardenServer(
            configuration: configuration, hsm: hsm, metrics: metrics, database: database, decryption: decryption,
            maintenance: maintenance, databaseHealth: databaseHealth, vault: vaultCore, vaultService: vault,
            vaultMaintenance: vaultMaintenance,
            merchantTokens: merchantTokens, merchantTokenEvents: merchantTokenEvents, notificationSources: notificationSources,
            relay: relay, webMerchants: webMerchants, tracing: tracing, audit: audit,
            drain: ShutdownDrain(period: configuration.shutdownDrain, deadline: configuration.shutdownDeadline, logger: logger),
            logger: logger)
    }

    /// What the HSM can do, as metrics, and a warning for each token version it cannot decrypt.
    private static func report(_ hsm: HSM, to metrics: ServerMetrics, logger: Logger) {
        metrics.setPaths(ecdh: hsm.capabilities.ecdhPath?.rawValue, rsa: hsm.capabilities.rsaDecryptionPath?.rawValue)
        metrics.setDispatch(hsm.dispatch.rawValue)
        metrics.setDecryptableVersions(HSMPaymentKeys.decryptableVersions(hsm))
        metrics.setVaultUsable(hsm.dataProtectionGaps.isEmpty)
        metrics.readPendingHSMOperations(limit: hsm.configuration.maxPendingOperations) { hsm.pendingOperations }
        for (version, gap) in HSMPaymentKeys.undecryptableVersions(hsm) {
            logger.warning("this HSM cannot decrypt \(version.rawValue) tokens: \(gap)")
        }
    }

    /// Each upstream configured, and a warning for a TLS client key kept in a file.
    private static func report(_ relay: RelayConfiguration, logger: Logger) {
        for upstream in relay.all {
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
    }

    /// Settings that are right for tests and sandboxes only, or that leave the service refusing
    /// every key, said at start-up.
    private static func warnAboutDevelopmentSettings(_ configuration: ServerConfiguration, logger: Logger) {
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
}
