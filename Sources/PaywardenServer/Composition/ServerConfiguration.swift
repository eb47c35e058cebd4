import ApplePay
import Foundation
import KeyCustody
import MerchantTokens
import PKCS11
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenServices
import ProcessorRelays
import Vault

/// What `paywarden serve` runs with: plain values, built from ``PaywardenSettings`` by
/// ``init(settings:)`` (which checks what the configuration module cannot: API-key scopes, trust
/// roots, the TLS files); tests start from the catalog's defaults and change what they need.
public struct ServerConfiguration: Sendable {
    public var listen: ListenAddress
    public var operationsListen: ListenAddress?
    public var apiKeys: APIKeyRegistry
    public var signingTimeWindow: TimeInterval
    public var trustAnchors: TrustAnchors
    /// The CAs merchant certificates must come from (the service's key store imports none, but
    /// shares the admin commands' view, and says at start when it is not Apple's).
    public var certificateIssuers: CertificateIssuers
    public var tls: ServerSettings.TLS?
    public var maxBodyBytes: Int
    public var maxInFlight: Int?
    /// How long a connection may send nothing (an unfinished request included) before it is closed.
    public var idleTimeout: Duration
    /// Open connections per listener; more wait to be accepted until one closes.
    public var maxConnections: Int
    /// From a request's first byte until it must have arrived whole: a slow body or slow headers
    /// are cut off with 408, whatever the idle timer says.
    public var requestReadTimeout: Duration
    /// Requests a kept-alive connection may carry; the last response says `Connection: close`.
    public var maxRequestsPerConnection: Int
    /// Open connections per client address (trusted proxies exempt): one client cannot hold them all.
    public var maxConnectionsPerClient: Int
    /// From SIGTERM until the listeners close: `/readyz` answers 503 `shutting_down` and every
    /// response closes its connection, so load balancers move away before anything is refused.
    public var shutdownDrain: Duration
    /// After the drain, how long requests in flight may take before they are cut off.
    public var shutdownDeadline: Duration
    public var recycleEvery: Int
    public var keyRefreshInterval: Duration
    public var hsm: HSMConfiguration
    public var database: DatabaseSettings
    /// eProtect registrations per second per `paypageId` and per client address.
    public var eProtectRatePerPaypage: Int
    public var eProtectRatePerAddress: Int
    /// Failed usage-information fetches per second per client address (bursts of ten times that).
    public var usageInformationFailuresPerAddress: Int
    public var vaultMaintenanceInterval: Duration
    public var vaultPolicy: VaultPolicy
    /// The vault's clock (registration expiry, purge); tests move it.
    public var vaultClock: @Sendable () -> Date = { Date() }
    /// The admin audit log, which detokenizations and deletions are written to as well.
    public var auditLogPath: String?
    /// Where audit lines are shipped besides the file (`PAYWARDEN_AUDIT_SYSLOG`).
    public var auditSyslog: SyslogDestination?
    /// How often this server signs a checkpoint of its audit chain (`PAYWARDEN_AUDIT_CHECKPOINT_SECONDS`).
    public var auditCheckpointInterval: Duration = .seconds(300)
    /// Apple's gateway and the merchant-token notifications.
    public var merchantTokens: MerchantTokenConfiguration
    /// How a web domain's challenge file is read (docs/web-merchants.md): from the domain itself,
    /// public addresses only. No setting changes it; tests point it at their stand-in.
    public var webMerchantDomainCheck = DomainChallengeFetcher.Configuration()
    /// The processor relay's upstreams, one per message format.
    public var relay: RelayConfiguration
    /// OpenTelemetry traces (`PAYWARDEN_TRACING=on`, the rest from the `OTEL_*` variables); nil: off.
    public var tracing: TracingConfiguration?
    /// Whose W3C `traceparent` is believed, by the connection's peer address
    /// (`PAYWARDEN_TRACE_CONTEXT_FROM`); everyone else's request starts a trace of its own.
    public var traceContextSources: [IPAddressBlock]
    /// The reverse proxies whose `X-Forwarded-For` is believed (`PAYWARDEN_TRUSTED_PROXIES`): read
    /// once, for every use of a client's address (Apple's notifications, eProtect's and usage
    /// information's per-address limits, the connections per client).
    public var trustedProxies: [IPAddressBlock]
    /// The client's address as the trusted proxies tell it.
    public var clients: ClientAddressResolver { ClientAddressResolver(trustedProxies: trustedProxies) }

    /// The service's configuration from the settings, with every value checked.
    public init(settings: PaywardenSettings) throws(ConfigurationError) {
        hsm = try HSMConfiguration(settings: settings.hsm)
        let server = settings.server
        listen = server.listen
        operationsListen = server.operationsListen
        do {
            apiKeys = APIKeyRegistry(keys: try server.apiKeyEntries.map(APIKey.init(entry:)))
        } catch {
            throw ConfigurationError("\(SettingCatalog.apiKeys.environmentName): \(error)")
        }
        signingTimeWindow = settings.verification.signingTimeWindow
        trustAnchors = try TrustAnchors.configured(settings.verification.trustRoots)
        certificateIssuers = try CertificateIssuers.configured(settings.verification.certificateIssuers)
        tls = server.tls
        // The files themselves, now: the listener would only read them when it starts.
        if let tls { _ = try ServerTLS.configuration(tls) }
        maxBodyBytes = server.maxBodyBytes
        maxInFlight = server.maxInFlight
        idleTimeout = .seconds(server.idleTimeoutSeconds)
        maxConnections = server.maxConnections
        requestReadTimeout = .seconds(server.requestReadTimeoutSeconds)
        maxRequestsPerConnection = server.maxRequestsPerConnection
        maxConnectionsPerClient = server.maxConnectionsPerClient
        shutdownDrain = .seconds(server.shutdownDrainSeconds)
        shutdownDeadline = .seconds(server.shutdownDeadlineSeconds)
        recycleEvery = settings.hsm.recycleEvery
        keyRefreshInterval = settings.hsm.keyRefreshInterval
        database = settings.database
        eProtectRatePerPaypage = server.eProtectRatePerPaypage
        eProtectRatePerAddress = server.eProtectRatePerAddress
        usageInformationFailuresPerAddress = settings.merchantTokens.usageInformationFailuresPerAddress
        vaultMaintenanceInterval = .seconds(server.vaultMaintenanceSeconds)
        vaultPolicy = VaultPolicy(
            retiredKeyGrace: TimeInterval(server.vaultRetiredKeyGraceSeconds),
            keyRefreshInterval: TimeInterval(server.vaultMaintenanceSeconds))
        // The same file the admin commands append to (`PaywardenHome.auditLog`).
        auditLogPath = settings.home + "/audit/audit.jsonl"
        auditSyslog = settings.auditSyslog
        auditCheckpointInterval = .seconds(settings.auditCheckpointSeconds)
        merchantTokens = try MerchantTokenConfiguration(settings: settings.merchantTokens)
        relay = try RelayConfiguration(settings: settings.relay)
        tracing = settings.tracingEnabled ? TracingConfiguration() : nil
        traceContextSources = try IPAddressBlock.blocks(settings.traceContextFrom, SettingCatalog.traceContextFrom)
        trustedProxies = try IPAddressBlock.blocks(settings.trustedProxies, SettingCatalog.trustedProxies)
    }
}
