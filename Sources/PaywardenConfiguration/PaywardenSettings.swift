import Foundation
import PaywardenPrimitives

/// Every setting, read and checked: plain values the composition root hands to each module.
/// Loading fails on the first bad value with a message naming the setting and what it accepts.
public struct PaywardenSettings: Sendable {
    public var home: String
    /// Where audit lines are shipped besides the file (`PAYWARDEN_AUDIT_SYSLOG`).
    public var auditSyslog: SyslogDestination?
    /// How often an audit writer signs a checkpoint of its chain (`PAYWARDEN_AUDIT_CHECKPOINT_SECONDS`).
    public var auditCheckpointSeconds: Int
    public var logLevel: String?
    /// `text` or `json`.
    public var logFormat: String
    /// Whether traces are exported (OpenTelemetry, configured by the `OTEL_*` variables).
    public var tracingEnabled: Bool
    /// CIDRs whose requests' `traceparent` is believed (`PAYWARDEN_TRACE_CONTEXT_FROM`); the server checks them.
    public var traceContextFrom: [String]
    /// CIDRs of the reverse proxies whose `X-Forwarded-For` is believed (`PAYWARDEN_TRUSTED_PROXIES`),
    /// for every use of a client's address; the server checks them.
    public var trustedProxies: [String]
    /// `keys import --pkcs12` without `--password-file`.
    public var pkcs12Password: Sensitive<String>?
    public var hsm: HSMSettings
    public var verification: VerificationSettings
    public var server: ServerSettings
    public var database: DatabaseSettings
    public var merchantTokens: MerchantTokenSettings
    /// The processor relay's upstreams.
    public var relay: RelaySettings
    /// What `config show` prints: each setting's effective value and where it came from.
    public let effective: [EffectiveSetting]

    /// Reads every setting from `sources`.
    public init(_ sources: ConfigurationSources) throws(ConfigurationError) {
        var reader = SettingsReader(sources: sources)
        typealias C = SettingCatalog
        home = URL(fileURLWithPath: try reader.string(defaulted: C.home)).standardizedFileURL.path
        if let destination = try reader.string(C.auditSyslog) {
            do {
                auditSyslog = try SyslogDestination(parsing: destination)
            } catch {
                throw ConfigurationError(C.auditSyslog, value: destination, expected: error.description)
            }
        }
        auditCheckpointSeconds = try reader.integer(defaulted: C.auditCheckpointSeconds)
        logLevel = try reader.choice(C.logLevel)
        logFormat = try reader.choice(defaulted: C.logFormat)
        tracingEnabled = try reader.choice(defaulted: C.tracing) == "on"
        traceContextFrom = try reader.list(C.traceContextFrom)
        trustedProxies = try reader.list(C.trustedProxies)
        pkcs12Password = try reader.string(C.pkcs12Password).map { Sensitive($0) }
        hsm = try HSMSettings(&reader)
        verification = VerificationSettings(
            signingTimeWindow: TimeInterval(try reader.integer(defaulted: C.signingTimeWindow)),
            trustRoots: try reader.list(C.trustRoots),
            certificateIssuers: try reader.list(C.certificateIssuers)
        )
        server = try ServerSettings(&reader)
        database = try DatabaseSettings(&reader, home: home)
        merchantTokens = try MerchantTokenSettings(&reader)
        relay = try RelaySettings(&reader)
        effective = reader.effective
    }

    /// Reads the environment and the configuration file (`file`, else `PAYWARDEN_CONFIG`).
    public static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment, file: String? = nil
    ) async throws(ConfigurationError) -> PaywardenSettings {
        try PaywardenSettings(await ConfigurationSources(environment: environment, file: file))
    }
}

/// The HSM: which module and token, the PIN's source, and how to use it.
public struct HSMSettings: Sendable {
    public var modulePath: String
    /// `C_Initialize`'s `pReserved` string (NSS softokn needs its database there); nil for NULL.
    public var initReserved: String?
    /// A label, or an RFC 7512 `pkcs11:` URI.
    public var token: String
    public var pin: PIN
    public var workers: Int
    public var maxPendingOperations: Int
    public var allowExtractableSharedSecret: Bool
    public var allowSoftwareOAEPDecoding: Bool
    /// `auto`, `on` or `off`.
    public var sessionKeyCopies: String
    /// `auto`, `inline` or `pool`.
    public var dispatch: String
    public var inlineThreshold: Duration
    public var recycleEvery: Int
    public var operationTimeout: Duration
    public var healthCheckTimeout: Duration
    public var keyRefreshInterval: Duration

    /// Where the user PIN comes from: a file (read at every login), or the environment.
    public enum PIN: Sendable {
        case file(String)
        case value(Sensitive<[UInt8]>)
        /// Neither is set; opening the token will say so.
        case missing
    }

    init(_ reader: inout SettingsReader) throws(ConfigurationError) {
        typealias C = SettingCatalog
        modulePath = try reader.string(defaulted: C.pkcs11Module)
        initReserved = try reader.string(C.pkcs11InitReserved)
        token = try reader.string(defaulted: C.tokenLabel)
        let file = try reader.string(C.pinFile)
        let value = try reader.string(C.pin)
        if file != nil, value != nil {
            throw ConfigurationError(
                "\(C.pinFile.environmentName) and \(C.pin.environmentName) are both set: keep one (the file is preferred)")
        }
        pin = file.map(PIN.file) ?? value.map { .value(Sensitive(Array($0.utf8))) } ?? .missing
        workers = try reader.integer(C.hsmWorkers) ?? ProcessInfo.processInfo.activeProcessorCount
        maxPendingOperations = try reader.integer(defaulted: C.hsmMaxPending)
        allowExtractableSharedSecret = try reader.boolean(C.hsmAllowExtractableECDH)
        allowSoftwareOAEPDecoding = try reader.boolean(C.hsmAllowSoftwareOAEP)
        sessionKeyCopies = try reader.choice(defaulted: C.hsmSessionKeyCopies)
        dispatch = try reader.choice(defaulted: C.hsmDispatch)
        inlineThreshold = .microseconds(try reader.integer(defaulted: C.hsmInlineThresholdMicroseconds))
        recycleEvery = try reader.integer(defaulted: C.hsmRecycleEvery)
        operationTimeout = .milliseconds(try reader.integer(defaulted: C.hsmOperationTimeoutMilliseconds))
        healthCheckTimeout = .milliseconds(try reader.integer(defaulted: C.hsmHealthTimeoutMilliseconds))
        keyRefreshInterval = .seconds(try reader.integer(defaulted: C.keyRefreshSeconds))
    }
}

/// Apple Pay verification: the signing-time window, the trust anchors, and the issuers of merchant certificates.
public struct VerificationSettings: Sendable {
    public var signingTimeWindow: TimeInterval
    /// PEM or DER files replacing the embedded Apple root; empty for the default.
    public var trustRoots: [String]
    /// PEM or DER files replacing Apple's pinned issuers of merchant certificates; empty for the default.
    public var certificateIssuers: [String]
}

/// The HTTP service.
public struct ServerSettings: Sendable {
    public var listen: ListenAddress
    public var operationsListen: ListenAddress?
    /// `NAME:SHA256HEX:SCOPE[+SCOPE…][:ORGANIZATION]` entries, checked by the server.
    public var apiKeyEntries: [String]
    public var tls: TLS?
    public var maxBodyBytes: Int
    public var maxInFlight: Int?
    /// Seconds a connection may stay silent, mid-request included, before it is closed.
    public var idleTimeoutSeconds: Int
    /// Open connections per listener; more wait in the kernel's queue until one closes.
    public var maxConnections: Int
    /// Seconds from a request's first byte until it must be whole (408 and close otherwise).
    public var requestReadTimeoutSeconds: Int
    /// Requests one kept-alive connection may carry before it is closed.
    public var maxRequestsPerConnection: Int
    /// Open connections per client address; trusted proxies are exempt.
    public var maxConnectionsPerClient: Int
    /// Seconds between SIGTERM and closing the listeners, answering `/readyz` 503 meanwhile.
    public var shutdownDrainSeconds: Int
    /// Seconds after the drain for requests in flight to finish.
    public var shutdownDeadlineSeconds: Int
    public var eventLoopThreads: Int
    /// eProtect registrations per second per `paypageId` and per client address.
    public var eProtectRatePerPaypage: Int
    public var eProtectRatePerAddress: Int
    /// Seconds between the vault's purge and re-wrap steps.
    public var vaultMaintenanceSeconds: Int
    /// Seconds a rotated-out vault key outlives its successor's creation.
    public var vaultRetiredKeyGraceSeconds: Int

    /// HTTPS, and optionally mutual TLS. Partial or contradictory settings are refused at load.
    public struct TLS: Sendable {
        public var certificatePath: String
        public var privateKeyPath: String
        public var clientCAPath: String?
        public var requireClientCertificate: Bool

        public init(certificatePath: String, privateKeyPath: String, clientCAPath: String? = nil, requireClientCertificate: Bool = false) {
            self.certificatePath = certificatePath
            self.privateKeyPath = privateKeyPath
            self.clientCAPath = clientCAPath
            self.requireClientCertificate = requireClientCertificate
        }
    }

    init(_ reader: inout SettingsReader) throws(ConfigurationError) {
        typealias C = SettingCatalog
        listen = try reader.address(defaulted: C.listen)
        operationsListen = try reader.address(C.operationsListen)
        apiKeyEntries = try reader.list(C.apiKeys)
        let certificate = try reader.file(C.tlsCertificate)
        let key = try reader.file(C.tlsPrivateKey)
        let clientCA = try reader.file(C.tlsClientCA)
        let requireClient = try reader.boolean(C.tlsRequireClientCertificate)
        tls = try Self.tls(certificate: certificate, key: key, clientCA: clientCA, requireClient: requireClient)
        maxBodyBytes = try reader.integer(defaulted: C.maxBodyBytes)
        maxInFlight = try reader.integer(C.maxInFlight)
        idleTimeoutSeconds = try reader.integer(defaulted: C.idleTimeoutSeconds)
        maxConnections = try reader.integer(defaulted: C.maxConnections)
        requestReadTimeoutSeconds = try reader.integer(defaulted: C.requestReadTimeoutSeconds)
        maxRequestsPerConnection = try reader.integer(defaulted: C.maxRequestsPerConnection)
        maxConnectionsPerClient = try reader.integer(defaulted: C.maxConnectionsPerClient)
        shutdownDrainSeconds = try reader.integer(defaulted: C.shutdownDrainSeconds)
        shutdownDeadlineSeconds = try reader.integer(defaulted: C.shutdownDeadlineSeconds)
        let dispatch = try reader.choice(C.hsmDispatch)
        eventLoopThreads = try reader.integer(C.eventLoopThreads) ?? EarlySettings.defaultEventLoopThreads(dispatch: dispatch)
        eProtectRatePerPaypage = try reader.integer(defaulted: C.eProtectRatePerPaypage)
        eProtectRatePerAddress = try reader.integer(defaulted: C.eProtectRatePerAddress)
        vaultMaintenanceSeconds = try reader.integer(defaulted: C.vaultMaintenanceSeconds)
        vaultRetiredKeyGraceSeconds = try reader.integer(defaulted: C.vaultRetiredKeyGraceSeconds)
        // Every instance re-reads the vault keys once a maintenance interval, and before sealing a
        // registration with keys older than that: a rotated-out key destroyed sooner than two
        // intervals after its successor was made could still be in use on an instance that has
        // not looked yet.
        guard vaultRetiredKeyGraceSeconds >= 2 * vaultMaintenanceSeconds else {
            throw ConfigurationError(
                "\(C.vaultRetiredKeyGraceSeconds.environmentName) (\(vaultRetiredKeyGraceSeconds)) must be at least twice "
                    + "\(C.vaultMaintenanceSeconds.environmentName) (\(vaultMaintenanceSeconds)): instances re-read the vault keys "
                    + "once an interval, so a shorter grace could destroy a key another instance still uses; set the grace to "
                    + "\(2 * vaultMaintenanceSeconds) or more, or the interval to \(vaultRetiredKeyGraceSeconds / 2) or less")
        }
    }

    /// TLS fails closed: every combination that would serve less than the operator asked for
    /// (plain HTTP despite client-certificate settings, optional client certificates despite
    /// "require") refuses to start, naming the settings involved.
    static func tls(certificate: String?, key: String?, clientCA: String?, requireClient: Bool) throws(ConfigurationError) -> TLS? {
        typealias C = SettingCatalog
        switch (certificate, key) {
        case (nil, nil):
            if clientCA != nil || requireClient {
                throw ConfigurationError(
                    "\(C.tlsClientCA.environmentName) or \(C.tlsRequireClientCertificate.environmentName) is set without "
                        + "\(C.tlsCertificate.environmentName) and \(C.tlsPrivateKey.environmentName): the service would serve plain "
                        + "HTTP; set the server certificate and key, or remove the client-certificate settings"
                )
            }
            return nil
        case (.some, nil), (nil, .some):
            throw ConfigurationError(
                "\(C.tlsCertificate.environmentName) and \(C.tlsPrivateKey.environmentName) go together: set both to serve HTTPS, or "
                    + "neither"
            )
        case (.some(let certificate), .some(let key)):
            if requireClient && clientCA == nil {
                throw ConfigurationError(
                    "\(C.tlsRequireClientCertificate.environmentName)=true needs \(C.tlsClientCA.environmentName), the CA whose client "
                        + "certificates are accepted"
                )
            }
            return TLS(certificatePath: certificate, privateKeyPath: key, clientCAPath: clientCA, requireClientCertificate: requireClient)
        }
    }
}

/// Settings read before anything else starts (the event loops must exist before any task runs).
public enum EarlySettings {
    /// `PAYWARDEN_EVENT_LOOP_THREADS`. By default one per core, where inline HSM calls run
    /// (`PAYWARDEN_HSM_DISPATCH` auto or inline), and one with pool dispatch, where the requests'
    /// work runs on the HSM workers and a second loop only competes with them for the cores.
    public static func eventLoopThreads(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError)
        -> Int
    {
        let setting = SettingCatalog.eventLoopThreads
        guard let text = environment[setting.environmentName], !text.isEmpty else {
            return defaultEventLoopThreads(dispatch: environment[SettingCatalog.hsmDispatch.environmentName])
        }
        guard let count = Int(text), case .integer(let range) = setting.kind, range.contains(count) else {
            throw ConfigurationError(setting, value: text, expected: setting.kind.accepts)
        }
        return count
    }

    static func defaultEventLoopThreads(dispatch: String?) -> Int {
        dispatch == "pool" ? 1 : ProcessInfo.processInfo.activeProcessorCount
    }
}
