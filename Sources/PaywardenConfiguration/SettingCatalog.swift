import Foundation

/// Every setting Paywarden reads, with its default. `deploy/paywarden.example.json` lists the
/// file-readable ones with these defaults (a test keeps the two in step), and `paywarden config
/// show` prints the effective value of each and where it came from.
public enum SettingCatalog {
    // MARK: Files and logging
    public static let home = Setting(
        "home", .path, default: .value("./Keys"),
        "the development token, CSRs and certificates an admin works with, and the audit log")
    public static let auditSyslog = Setting(
        "audit_syslog", .string,
        "ship every audit line, as written to the file, to syslog (RFC 5424, facility authpriv): unix:/PATH for the local daemon's "
            + "datagram socket (unix:/dev/log, where journald or rsyslog listens) or udp:HOST:PORT to loopback only (the daemon "
            + "forwards it off the machine over TLS); serve refuses to start when nothing can be sent there; unset: the file only")
    public static let auditCheckpointSeconds = Setting(
        "audit_checkpoint_seconds", .integer(1...86_400), default: .value("300"),
        "how often a writer of the audit trail signs a checkpoint of its chain (with the HSM's audit signing key) when it wrote a "
            + "line since the last; one is signed when it stops as well. A cut tail loses at most this much without a trace "
            + "the public key alone can see (the HSM's MACs see every line)")
    public static let logLevel = Setting(
        "log_level", .choice(["trace", "debug", "info", "notice", "warning", "error", "critical"]),
        default: .computed("info for serve, warning for other commands"), "the least severe log level written")
    public static let logFormat = Setting(
        "log_format", .choice(["text", "json"]), default: .value("text"),
        "text: one line of time, level, label, key=value metadata, source and message; json: one JSON object a line (time, level, "
            + "label, source, message, request_id, trace_id and span_id when tracing, metadata)")
    public static let tracing = Setting(
        "tracing", .choice(["off", "on"]), default: .value("off"),
        "export OpenTelemetry traces over OTLP/HTTP; where to and how many are set by the standard OTEL_* variables")
    public static let traceContextFrom = Setting(
        "trace_context_from", .list,
        "CIDRs of the peers (a gateway or proxy of yours) whose W3C traceparent a request may continue; any other request starts a "
            + "trace of its own, the caller's kept as a span link (default: none). A caller's tracestate is never taken or forwarded")

    // MARK: HSM
    public static let pkcs11Module = Setting(
        "pkcs11_module", .path, default: .value("/usr/lib/softhsm/libsofthsm2.so"), "the HSM's PKCS#11 library")
    public static let pkcs11InitReserved = Setting(
        "pkcs11_init_reserved", .string,
        "the string passed as pReserved to C_Initialize (NSS softokn's configdir=… parameters; p11-kit's x-init-reserved); unset: NULL")
    public static let tokenLabel = Setting(
        "token_label", .string, default: .value("paywarden"),
        "the token's label, or an RFC 7512 pkcs11: URI (token=, module-path=, pin-source=file:…)")
    public static let pinFile = Setting("pin_file", .path, "a file holding the user PIN (mode 0600)")
    public static let pin = Setting(
        "pin", .string, exposure: .secret,
        "the user PIN itself, when there is no PIN file (environment only, never a file or an argument)")
    public static let pkcs12Password = Setting(
        "pkcs12_password", .string, exposure: .secret,
        "the password of a PKCS#12 file given to `keys import` without --password-file")
    public static let hsmWorkers = Setting(
        "hsm_workers", .integer(1...256), default: .computed("the number of cores"),
        "sessions and threads doing HSM work")
    public static let hsmMaxPending = Setting(
        "hsm_max_pending", .integer(1...1_000_000), default: .value("256"),
        "HSM operations and decryptions allowed to wait for a worker before new ones are refused as overloaded")
    public static let hsmAllowExtractableECDH = Setting(
        "hsm_allow_extractable_ecdh", .boolean, default: .value("false"),
        "permit the ECDH path where the shared secret leaves the HSM")
    public static let hsmAllowSoftwareOAEP = Setting(
        "hsm_allow_software_oaep", .boolean, default: .value("false"),
        "permit raw RSA in the HSM with OAEP decoded by OpenSSL (SoftHSM needs it for RSA_v1)")
    public static let hsmSessionKeyCopies = Setting(
        "hsm_session_key_copies", .choice(["auto", "on", "off"]), default: .value("auto"),
        "decrypt with per-session copies of the token keys (auto: on for SoftHSM)")
    public static let hsmDispatch = Setting(
        "hsm_dispatch", .choice(["auto", "inline", "pool"]), default: .value("auto"),
        "where HSM calls run: on the request's own thread (inline), on the HSM worker threads (pool), or inline when the module's "
            + "fastest round trip is within hsm_inline_threshold_us (auto: SoftHSM and NSS softokn inline, a module behind a socket "
            + "or a network on the pool)")
    public static let hsmInlineThresholdMicroseconds = Setting(
        "hsm_inline_threshold_us", .integer(1...100_000), default: .value("10"),
        "the module's fastest round trip (of 15 C_GenerateRandom, measured at start) within which auto dispatch runs calls inline")
    public static let hsmRecycleEvery = Setting(
        "hsm_recycle_every", .integer(0...100_000_000), default: .value("10000"),
        "decryptions between module recycles (0: never); SoftHSM leaks about 241 B per derive until then")
    public static let hsmOperationTimeoutMilliseconds = Setting(
        "hsm_operation_timeout_ms", .integer(100...600_000), default: .value("10000"),
        "how long a request waits for an HSM operation (queued and running) before a 503 hsm_unavailable")
    public static let hsmHealthTimeoutMilliseconds = Setting(
        "hsm_health_timeout_ms", .integer(100...60_000), default: .value("2000"),
        "how long the health check waits for the HSM before the service reports not ready")
    public static let keyRefreshSeconds = Setting(
        "key_refresh_seconds", .integer(1...3600), default: .value("10"),
        "seconds between key-map reloads and HSM health checks")

    // MARK: Apple Pay verification
    public static let signingTimeWindow = Setting(
        "signing_time_window", .integer(1...86_400), default: .value("300"),
        "seconds a token's signing time may be from now")
    public static let trustRoots = Setting(
        "trust_roots", .list, default: .computed("the embedded Apple Root CA - G3"),
        "PEM or DER files that replace the pinned Apple root (sandboxes and tests)")
    public static let certificateIssuers = Setting(
        "certificate_issuers", .list,
        default: .computed("Apple's pinned WWDR CA - G2 (processing) and WWDR CA - G3 (identity)"),
        "PEM or DER files of the CAs that replace Apple's as issuers of imported merchant certificates (sandboxes and tests)")

    // MARK: HTTP service
    public static let listen = Setting("listen", .address, default: .value("127.0.0.1:8080"), "the API listener")
    public static let operationsListen = Setting(
        "operations_listen", .address,
        "a separate listener for /metrics, /healthz and /readyz (default: served on the API listener)")
    public static let apiKeys = Setting(
        "api_keys", .list,
        "NAME:SHA256HEX:SCOPE[+SCOPE…][:ORGANIZATION] entries: the SHA-256 of each key, never the key")
    public static let tlsCertificate = Setting("tls_certificate", .path, "PEM certificate chain: serve HTTPS (needs tls_private_key)")
    public static let tlsPrivateKey = Setting("tls_private_key", .path, "PEM private key of tls_certificate")
    public static let tlsClientCA = Setting("tls_client_ca", .path, "PEM CA whose client certificates are accepted (mutual TLS)")
    public static let tlsRequireClientCertificate = Setting(
        "tls_require_client_certificate", .boolean, default: .value("false"),
        "refuse clients without a certificate from tls_client_ca")
    public static let maxBodyBytes = Setting(
        "max_body_bytes", .integer(1024...1_048_576), default: .value("65536"), "the largest request body")
    public static let maxInFlight = Setting(
        "max_in_flight", .integer(1...100_000), default: .computed("64 per HSM worker"),
        "decryptions at once; beyond it, a fast 503 overloaded")
    public static let idleTimeoutSeconds = Setting(
        "idle_timeout_seconds", .integer(1...3600), default: .value("30"),
        "seconds a connection may send nothing (an unfinished request included) before it is closed: slow clients cannot hold it")
    public static let maxConnections = Setting(
        "max_connections", .integer(1...1_000_000), default: .value("512"),
        "open connections per listener; beyond it, new ones wait to be accepted until one closes")
    public static let requestReadTimeoutSeconds = Setting(
        "request_read_timeout_seconds", .integer(1...3600), default: .value("10"),
        "seconds from a request's first byte until it must have arrived whole; else 408 and the connection is closed")
    public static let maxRequestsPerConnection = Setting(
        "max_requests_per_connection", .integer(1...1_000_000), default: .value("1000"),
        "requests one connection may carry; the last is answered with Connection: close")
    public static let shutdownDrainSeconds = Setting(
        "shutdown_drain_seconds", .integer(0...3600), default: .value("15"),
        "seconds between SIGTERM and closing the listeners, while /readyz answers 503 shutting_down and every response says "
            + "Connection: close, so that load balancers stop sending first; longer than their readiness period times threshold")
    public static let shutdownDeadlineSeconds = Setting(
        "shutdown_deadline_seconds", .integer(1...3600), default: .value("10"),
        "seconds after the drain for requests in flight to finish before they are cut off and the process exits non-zero")
    public static let maxConnectionsPerClient = Setting(
        "max_connections_per_client", .integer(1...1_000_000), default: .value("128"),
        "open connections per client address (trusted proxies exempt); beyond it, a new one is closed at once")
    public static let eventLoopThreads = Setting(
        "event_loop_threads", .integer(1...256),
        default: .computed("the number of cores; 1 with PAYWARDEN_HSM_DISPATCH=pool in the environment"),
        exposure: .environmentOnly,
        "NIO event loops, which also run every task outside the HSM workers, and the HSM calls with inline dispatch "
            + "(read before anything else starts)")

    // MARK: CardVault
    public static let eProtectRatePerPaypage = Setting(
        "eprotect_rate_per_paypage", .integer(1...1_000_000), default: .value("200"),
        "registrations per second one paypageId may post (bursts of twice that); beyond it, 429 with Retry-After")
    public static let eProtectRatePerAddress = Setting(
        "eprotect_rate_per_address", .integer(1...1_000_000), default: .value("20"),
        "registrations per second one client address may post (bursts of twice that); beyond it, 429 with Retry-After")
    public static let vaultMaintenanceSeconds = Setting(
        "vault_maintenance_seconds", .integer(1...3600), default: .value("30"),
        "how often the service purges expired registrations and moves rows off rotated-out vault keys")
    public static let vaultRetiredKeyGraceSeconds = Setting(
        "vault_retired_key_grace_seconds", .integer(0...86_400), default: .value("60"),
        "how long a rotated-out vault key outlives its successor's creation, so every instance has re-read the keys before it goes "
            + "(at least twice vault_maintenance_seconds)")

    // MARK: Merchant tokens and Apple's gateway
    public static let applePayGateway = Setting(
        "apple_pay_gateway", .url, default: .value("https://apple-pay-gateway.apple.com"),
        "base URL of Apple's gateway for merchant-token events, unlink and update calls (its host must be on merchant_validation_hosts)")
    public static let applePayGatewayCA = Setting(
        "apple_pay_gateway_ca", .list, "PEM files of extra trust roots for the gateway, beside the system's (tests and sandboxes)")
    public static let applePayGatewayTimeoutSeconds = Setting(
        "apple_pay_gateway_timeout_seconds", .integer(1...120), default: .value("20"),
        "how long one call to Apple's gateway may take, the TLS handshake included")
    public static let merchantValidationHosts = Setting(
        "merchant_validation_hosts", .list,
        default: .value(
            "apple-pay-gateway.apple.com,apple-pay-gateway-nc-pod*.apple.com,apple-pay-gateway-pr-pod*.apple.com,"
                + "apple-pay-gateway-cert.apple.com,apple-pay-gateway-stage.apple.com,cn-apple-pay-gateway.apple.com"),
        "the only hosts (HOST or HOST:PORT; * within the first label) Paywarden connects to for Apple: the gateway and validationURL")
    public static let merchantTokenAllowedSources = Setting(
        "merchant_token_allowed_sources", .list, default: .value("17.58.0.0/18,17.58.192.0/18"),
        "CIDRs allowed to send merchant-token notifications (Apple's ranges); others get 403")
    public static let trustedProxies = Setting(
        "trusted_proxies", .list,
        "CIDRs of reverse proxies whose X-Forwarded-For is believed: the notification allow-list, eProtect's per-client limit, "
            + "and exempt from max_connections_per_client (default: none, the peer address)")
    public static let merchantTokenPendingLimit = Setting(
        "merchant_token_pending_limit", .integer(1...1_000_000), default: .value("10000"),
        "merchant-token events waiting to be fetched at most; beyond it notifications are answered 503 and Apple retries")
    public static let merchantTokenPollSeconds = Setting(
        "merchant_token_poll_seconds", .integer(1...3600), default: .value("10"),
        "how often the service looks for merchant-token events due for a fetch (a notification wakes it at once)")
    public static let platformIntegratorID = Setting(
        "platform_integrator_id", .string,
        "the Payment Platform Integrator ID (e.g. platformintegrator.com.example) whose identity key in the HSM calls Apple's Web "
            + "Merchant Registration API; unset: web-merchant routes and commands are refused")

    // MARK: Processor relay
    public static let relayCnpUpstream = Setting(
        "relay_cnp_upstream", .url,
        "base URL of the cnpAPI authorization engine that relayed authorization and sale requests go to (BASE/vap/communicator/online); "
            + "https, or http to a loopback host; unset: those requests are refused")
    public static let relayCnpUpstreamCA = Setting(
        "relay_cnp_upstream_ca", .list, "PEM files of extra trust roots for the cnpAPI upstream, beside the system's")
    public static let relayCnpUpstreamUser = Setting(
        "relay_cnp_upstream_user", .string,
        "the cnpAPI user Paywarden authenticates with upstream (with relay_cnp_upstream_password_file); unset: the client's user, "
            + "with an empty password")
    public static let relayCnpUpstreamPasswordFile = Setting(
        "relay_cnp_upstream_password_file", .path, "a file holding the cnpAPI upstream's password (mode 0600), read at start-up")
    public static let relayCnpUpstreamClientCertificate = Setting(
        "relay_cnp_upstream_client_certificate", .path,
        "a PEM file with the client certificate (and chain) Paywarden presents to the cnpAPI upstream, with "
            + "relay_cnp_upstream_client_key; unset: none, or with HSM keys the certificate imported for each (of two keys, the "
            + "one whose public key it holds presents it)")
    public static let relayCnpUpstreamClientKey = Setting(
        "relay_cnp_upstream_client_key", .list,
        "the client certificate's key: HSM keys of purpose upstream by id (hex) or pkcs11:id=… URI, in order of preference (two "
            + "during a changeover: the first the upstream accepts is presented, without a restart), or one PEM file (mode 0600, read "
            + "at start-up; the start warns)")
    public static let relayCnpMerchantIDs = Setting(
        "relay_cnp_merchant_ids", .list,
        "ORGANIZATION=MERCHANTID entries: the cnpAPI merchantIds each organisation may send upstream (one entry per merchantId); "
            + "required with relay_cnp_upstream, since the upstream acts on Paywarden's credentials for whichever merchantId it gets")
    public static let relayMercuryPayUpstream = Setting(
        "relay_mercurypay_upstream", .url,
        "base URL of the MercuryPay engine that relayed SaleByRecordNo and AuthorizeByRecordNo requests go to (as BASE/PaymentsAPI/"
            + "Credit/Sale and …/PreAuth); https, or http to a loopback host; unset: those requests are refused")
    public static let relayMercuryPayUpstreamCA = Setting(
        "relay_mercurypay_upstream_ca", .list, "PEM files of extra trust roots for the MercuryPay upstream, beside the system's")
    public static let relayMercuryPayUpstreamUser = Setting(
        "relay_mercurypay_upstream_user", .string,
        "the merchant ID Paywarden sends upstream as HTTP Basic user (with relay_mercurypay_upstream_password_file); unset: no "
            + "Authorization header (the client's is Paywarden's API key and never leaves)")
    public static let relayMercuryPayUpstreamPasswordFile = Setting(
        "relay_mercurypay_upstream_password_file", .path,
        "a file holding the MercuryPay upstream's password (mode 0600), read at start-up")
    public static let relayMercuryPayUpstreamClientCertificate = Setting(
        "relay_mercurypay_upstream_client_certificate", .path,
        "a PEM file with the client certificate (and chain) Paywarden presents to the MercuryPay upstream, with "
            + "relay_mercurypay_upstream_client_key; unset: none, or with HSM keys the certificate imported for each (of two keys, the "
            + "one whose public key it holds presents it)")
    public static let relayMercuryPayUpstreamClientKey = Setting(
        "relay_mercurypay_upstream_client_key", .list,
        "the client certificate's key: HSM keys of purpose upstream by id (hex) or pkcs11:id=… URI, in order of preference (two "
            + "during a changeover: the first the upstream accepts is presented, without a restart), or one PEM file (mode 0600, read "
            + "at start-up; the start warns)")
    public static let relayMercuryPayOrganizations = Setting(
        "relay_mercurypay_organizations", .list,
        "the organisations that may relay through the MercuryPay upstream; required with relay_mercurypay_upstream, since every "
            + "request goes on the one configured merchant's credentials")
    public static let relayMercuryPayCryptogramField = Setting(
        "relay_mercurypay_cryptogram_field", .string,
        "the upstream's JSON field for the Apple Pay cryptogram (MercuryPay documents none); unset: the cryptogram is not sent")
    public static let relayMercuryPayECIField = Setting(
        "relay_mercurypay_eci_field", .string, "the upstream's JSON field for the ECI; unset: the ECI is not sent")
    public static let relayRadialUpstream = Setting(
        "relay_radial_upstream", .url,
        "base URL of the Radial engine that relayed DW.xml authorizations go to (as BASE/v1.0/stores/STORE/payments/creditcard/auth/"
            + "VC.xml, MC.xml or AM.xml); https, or http to a loopback host; unset: those requests are refused (decryptblob still answers)")
    public static let relayRadialUpstreamCA = Setting(
        "relay_radial_upstream_ca", .list, "PEM files of extra trust roots for the Radial upstream, beside the system's")
    public static let relayRadialStoreIDs = Setting(
        "relay_radial_store_ids", .list,
        "ORGANIZATION=STOREID entries: the Radial stores each organisation may authorize for; required with relay_radial_upstream, "
            + "since the upstream acts on Paywarden's API key for whatever store a request names")
    public static let relayRadialUpstreamAPIKeyFile = Setting(
        "relay_radial_upstream_api_key_file", .path,
        "a file holding the Radial upstream's API key (mode 0600), read at start-up and sent as its apiKey header; unset: none is sent")
    public static let relayRadialUpstreamClientCertificate = Setting(
        "relay_radial_upstream_client_certificate", .path,
        "a PEM file with the client certificate (and chain) Paywarden presents to the Radial upstream, with "
            + "relay_radial_upstream_client_key; unset: none, or with HSM keys the certificate imported for each (of two keys, the "
            + "one whose public key it holds presents it)")
    public static let relayRadialUpstreamClientKey = Setting(
        "relay_radial_upstream_client_key", .list,
        "the client certificate's key: HSM keys of purpose upstream by id (hex) or pkcs11:id=… URI, in order of preference (two "
            + "during a changeover: the first the upstream accepts is presented, without a restart), or one PEM file (mode 0600, read "
            + "at start-up; the start warns)")
    public static let relayUpstreamTimeoutSeconds = Setting(
        "relay_upstream_timeout_seconds", .integer(1...300), default: .value("30"),
        "how long one upstream call may take, the TLS handshake included; it is never retried")

    // MARK: Database
    public static let databaseURL = Setting(
        "database_url", .url, default: .computed("sqlite:$PAYWARDEN_HOME/paywarden.sqlite"),
        "sqlite:PATH, postgres://USER@HOST[:PORT]/DB?sslmode=verify-full|verify-ca|require|disable[&sslrootcert=PEM], or memory: "
            + "(replay protection in this process only: tests and load tests)")
    public static let databasePasswordFile = Setting(
        "database_password_file", .path, "a file holding the PostgreSQL password (mode 0600)")
    public static let databasePassword = Setting(
        "database_password", .string, exposure: .secret, "the PostgreSQL password itself, when there is no password file")
    public static let databasePoolSize = Setting(
        "database_pool_size", .integer(1...500), default: .value("10"), "PostgreSQL connections at most, per instance")
    public static let databaseTimeoutMilliseconds = Setting(
        "database_timeout_ms", .integer(50...120_000), default: .value("2000"),
        "how long a statement may wait for the database (a connection included) before it is answered as unavailable")
    public static let databaseAutoMigrate = Setting(
        "database_auto_migrate", .boolean, default: .computed("true for SQLite, false for PostgreSQL"),
        "serve migrates an older schema at start-up instead of refusing to start")

    // MARK: Merchant-token usage information
    public static let publicURL = Setting(
        "public_url", .url,
        "base URL devices reach Paywarden at for merchant-token usage information (Apple's webServiceURL; devices GET "
            + "BASE/v1/merchantToken/{id}/usageInformation); https, or http to a loopback host; unset: usage information is off")
    public static let usageInformationFailuresPerAddress = Setting(
        "usage_information_failures_per_address", .integer(1...1_000_000), default: .value("1"),
        "failed usage-information fetches per second one client address may make (bursts of ten times that); beyond it every "
            + "fetch from that address is answered 429 with Retry-After until it may fail again (a device with its token never fails)")

    /// Every setting, in the order `config show` and the example file list them.
    public static let all: [Setting] = [
        home, auditSyslog, auditCheckpointSeconds, logLevel, logFormat, tracing, traceContextFrom,
        pkcs11Module, pkcs11InitReserved, tokenLabel, pinFile, pin, pkcs12Password, hsmWorkers, hsmMaxPending, hsmAllowExtractableECDH,
        hsmAllowSoftwareOAEP,
        hsmSessionKeyCopies, hsmDispatch, hsmInlineThresholdMicroseconds, hsmRecycleEvery, hsmOperationTimeoutMilliseconds,
        hsmHealthTimeoutMilliseconds, keyRefreshSeconds,
        signingTimeWindow, trustRoots, certificateIssuers,
        listen, operationsListen, apiKeys, tlsCertificate, tlsPrivateKey, tlsClientCA, tlsRequireClientCertificate,
        maxBodyBytes, maxInFlight, idleTimeoutSeconds, maxConnections, requestReadTimeoutSeconds, maxRequestsPerConnection,
        maxConnectionsPerClient, shutdownDrainSeconds, shutdownDeadlineSeconds, eventLoopThreads,
        eProtectRatePerPaypage, eProtectRatePerAddress, vaultMaintenanceSeconds, vaultRetiredKeyGraceSeconds,
        applePayGateway, applePayGatewayCA, applePayGatewayTimeoutSeconds, merchantValidationHosts, merchantTokenAllowedSources,
        trustedProxies, merchantTokenPendingLimit, merchantTokenPollSeconds,
        relayCnpUpstream, relayCnpUpstreamCA, relayCnpUpstreamUser, relayCnpUpstreamPasswordFile, relayCnpUpstreamClientCertificate,
        relayCnpUpstreamClientKey,
        relayCnpMerchantIDs,
        relayMercuryPayUpstream,
        relayMercuryPayUpstreamCA, relayMercuryPayUpstreamUser, relayMercuryPayUpstreamPasswordFile,
        relayMercuryPayUpstreamClientCertificate, relayMercuryPayUpstreamClientKey, relayMercuryPayOrganizations,
        relayMercuryPayCryptogramField,
        relayMercuryPayECIField, relayRadialUpstream, relayRadialUpstreamCA, relayRadialStoreIDs, relayRadialUpstreamAPIKeyFile,
        relayRadialUpstreamClientCertificate, relayRadialUpstreamClientKey, relayUpstreamTimeoutSeconds,
        databaseURL, databasePasswordFile, databasePassword, databasePoolSize, databaseTimeoutMilliseconds, databaseAutoMigrate,
        platformIntegratorID,
        publicURL, usageInformationFailuresPerAddress,
    ]

    /// The variable naming the configuration file (not itself a setting of the file).
    public static let configurationFileVariable = "PAYWARDEN_CONFIG"
}
