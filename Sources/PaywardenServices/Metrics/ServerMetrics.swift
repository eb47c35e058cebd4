import ApplePay
import Foundation
import PKCS11
import Prometheus
import Synchronization

/// Paywarden's metrics in a Prometheus registry, exposed at `/metrics`. Labels carry routes,
/// statuses, error codes, key ids and merchant ids; never card data.
public final class ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    private let decryptDuration: DurationHistogram
    private let recycles: Counter
    private let activeKeys: Gauge
    private let inFlight: Gauge
    private let databaseAvailable: Gauge
    private let replayPurged: Counter
    private let auditSyslogFailures: Counter
    private let certificateDays = Mutex<Set<[String]>>([])
    private let unreadableKeyIDs = Mutex<Set<String>>([])
    /// Counters by label values, so a request costs a dictionary lookup instead of the
    /// registry's name-and-labels key building.
    private let requestCounters = Mutex<[RequestLabels: Counter]>([:])
    private let outcomeCounters = Mutex<[String: Counter]>([:])
    private let keyCounters = Mutex<[LabelPair: Counter]>([:])
    private let vaultCounters = Mutex<[LabelPair: Counter]>([:])
    private let vaultDuration: DurationHistogram
    private let upstreamCounters = Mutex<[LabelPair: Counter]>([:])
    private let upstreamDurations = Mutex<[String: DurationHistogram]>([:])
    private let appleCounters = Mutex<[LabelPair: Counter]>([:])
    private let requestDurations = Mutex<[RouteLabels: DurationHistogram]>([:])
    private let hsmDurations = Mutex<[String: DurationHistogram]>([:])
    private let hsmQueueWait: DurationHistogram
    private let hsmPending: Gauge
    /// Read at each scrape: the HSM's operations admitted and not yet finished.
    private let pendingSource = Mutex<(@Sendable () -> Int)?>(nil)

    /// Two label values, the cache key of a counter with two labels (API key and outcome,
    /// operation and outcome, format and outcome).
    private struct LabelPair: Hashable {
        let first: String
        let second: String
    }

    private struct RequestLabels: Hashable {
        let route: String
        let status: Int
    }

    /// A request duration's labels: the route template, the method and the status class (`2xx`).
    private struct RouteLabels: Hashable {
        let route: String
        let method: String
        let statusClass: String
    }

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        decryptDuration = registry.makeDurationHistogram(
            descriptor: Self.name("decrypt_duration", unit: "seconds", "Time to verify and decrypt one token, successful or not"),
            buckets: Self.latencyBuckets)
        recycles = registry.makeCounter(descriptor: Self.name("hsm_module_recycles", unit: "total", "PKCS#11 module re-initialisations"))
        activeKeys = registry.makeGauge(
            descriptor: Self.name("decryption", unit: "keys", "Active and retired processing keys in the key map"))
        inFlight = registry.makeGauge(descriptor: Self.name("decrypt", unit: "in_flight", "Decryptions admitted and not yet finished"))
        databaseAvailable = registry.makeGauge(
            descriptor: Self.name("database", unit: "available", "1 when the database answered its last check"))
        vaultDuration = registry.makeDurationHistogram(
            descriptor: Self.name("vault_duration", unit: "seconds", "Time for one vault operation, successful or not"),
            buckets: Self.latencyBuckets)
        replayPurged = registry.makeCounter(
            descriptor: Self.name("replay_ledger_purged", unit: "total", "Expired transaction ids deleted from the replay ledger"))
        auditSyslogFailures = registry.makeCounter(
            descriptor: Self.name(
                "audit_syslog_failures", unit: "total", "Audit lines written to the file but not shipped to syslog (PAYWARDEN_AUDIT_SYSLOG)"
            ))
        hsmQueueWait = registry.makeDurationHistogram(
            descriptor: Self.name("hsm_queue_wait", unit: "seconds", "Time an HSM operation waited for a worker (pool dispatch only)"),
            buckets: Self.millisecondBuckets)
        hsmPending = registry.makeGauge(
            descriptor: Self.name("hsm_operations", unit: "pending", "HSM operations admitted and not yet finished, at the scrape"))
        prepareOutcomeCounters()
    }

    /// The counters of every outcome known in advance, failures included, at 0: an alert's
    /// increase() sees a failure that happens first, and a dashboard shows 0 rather than nothing.
    private func prepareOutcomeCounters() {
        for outcome in [.ok] + PaymentTokenError.Code.allCases.map(OperationOutcome.refused) { _ = decryptOutcome(outcome) }
        for outcome in MerchantTokenOutcome.allCases { _ = merchantTokenCounter(outcome.rawValue) }
        for kind in VaultMaintenanceKind.allCases { _ = vaultMaintenanceCounter(kind) }
        _ = replayLedgerErrors("purge")
    }

    /// Makes the payment-session failure counters of each of `codes` (the Apple gateway's error codes).
    public func preparePaymentSessionFailures(_ codes: [String]) {
        for code in codes { _ = merchantTokenCounter("payment_session_\(code)") }
    }

    /// From 100 µs to 5 s, mostly milliseconds: an HTTP request, an HSM call or its wait for a worker.
    private static let millisecondBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5),
    ]

    /// The status classes a request's duration is kept under; 1xx and 3xx are not answered here.
    static let statusClasses = ["2xx", "4xx", "5xx"]
    /// The methods kept as they are; anything else is `other`, so a client cannot add series.
    static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    /// The outcomes of a call to Apple (``appleRequest(operation:outcome:)``).
    public static let appleOutcomes = ["ok", "http_4xx", "throttled", "http_5xx", "unreachable", "invalid_response", "hsm_unavailable"]
    /// The outcomes of a call to a processor upstream, every one present from the start.
    public static let upstreamOutcomes = UpstreamOutcome.allCases.map(\.rawValue)

    /// From half a millisecond to a second: a decryption or a vault operation, on any HSM.
    private static let latencyBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
    ]

    private static var requests: MetricNameDescriptor { name("http_requests", unit: "total", "HTTP requests by route and status") }
    private static var outcomes: MetricNameDescriptor {
        name("decrypt_outcomes", unit: "total", "Decryptions by outcome: ok or the error code")
    }
    private static var requestsByKey: MetricNameDescriptor {
        name("decrypt_requests_by_key", unit: "total", "Decrypt-endpoint calls by API key name and outcome: ok or the error code")
    }
    private static var paths: MetricNameDescriptor { name("hsm", unit: "path", "The HSM path in use for each key operation (1)") }
    private static var dispatch: MetricNameDescriptor {
        name("hsm_dispatch", unit: "", "Where HSM calls run now: 1 for the mode in use (inline or pool), 0 for the other")
    }
    private static var readiness: MetricNameDescriptor { name("ready", unit: "", "1 when the HSM is logged in and the key map loaded") }
    private static var certificateDaysLeft: MetricNameDescriptor {
        name("certificate_days", unit: "left", "Days until the key certificate expires")
    }

    private static var unreadableKey: MetricNameDescriptor {
        name("hsm_unreadable_key", unit: "", "1 for each key Paywarden manages whose object, record or certificate cannot be read")
    }

    private static func name(_ metric: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "paywarden", metricName: metric, unitName: unit, helpText: help)
    }

    /// One request answered: counted by route and status, its duration kept by route template,
    /// method and status class.
    public func request(route: String, method: String, status: Int, duration: Duration) {
        Self.counter(in: requestCounters, for: RequestLabels(route: route, status: status)) {
            registry.makeCounter(descriptor: Self.requests, labels: [("route", route), ("status", String(status))])
        }.increment()
        let method = Self.methods.contains(method) ? method : "other"
        requestDuration(RouteLabels(route: route, method: method, statusClass: "\(min(max(status / 100, 1), 5))xx")).record(duration)
    }

    /// Makes every route's duration series (each status class) so that they are there, at 0, from the start.
    public func prepareRoutes(_ routes: [(method: String, route: String)]) {
        for (method, route) in routes {
            for statusClass in Self.statusClasses {
                _ = requestDuration(RouteLabels(route: route, method: method, statusClass: statusClass))
            }
        }
    }

    private func requestDuration(_ labels: RouteLabels) -> DurationHistogram {
        requestDurations.withLock { histograms in
            if let histogram = histograms[labels] { return histogram }
            let histogram = registry.makeDurationHistogram(
                descriptor: Self.name(
                    "http_request_duration", unit: "seconds", "Time to answer a request, by route template, method and status class"),
                labels: [("route", labels.route), ("method", labels.method), ("status_class", labels.statusClass)],
                buckets: Self.millisecondBuckets)
            histograms[labels] = histogram
            return histogram
        }
    }

    /// One HSM key operation as it happened (the HSM's operation observer): its duration by
    /// operation, and its wait for a worker when it was queued.
    public func hsmOperation(_ record: HSMOperationRecord) {
        hsmDuration(record.operation).record(record.duration)
        if let wait = record.queueWait { hsmQueueWait.record(wait) }
    }

    /// Makes each operation's duration series, so that they are there, at 0, from the start.
    public func prepareHSMOperations(_ operations: [String]) {
        for operation in operations { _ = hsmDuration(operation) }
    }

    /// Where the pending-operations gauge is read from at each scrape, and the most that may be
    /// pending (`PAYWARDEN_HSM_MAX_PENDING`), past which operations are refused as overloaded.
    public func readPendingHSMOperations(limit: Int, from source: @escaping @Sendable () -> Int) {
        pendingSource.withLock { $0 = source }
        registry.makeGauge(
            descriptor: Self.name(
                "hsm_operations_pending", unit: "limit", "The most HSM operations that may be pending (PAYWARDEN_HSM_MAX_PENDING)")
        ).set(to: Double(limit))
    }

    private func hsmDuration(_ operation: String) -> DurationHistogram {
        hsmDurations.withLock { histograms in
            if let histogram = histograms[operation] { return histogram }
            let histogram = registry.makeDurationHistogram(
                descriptor: Self.name("hsm_operation_duration", unit: "seconds", "Time for one HSM key operation, queue wait included"),
                labels: [("operation", operation)], buckets: Self.millisecondBuckets)
            histograms[operation] = histogram
            return histogram
        }
    }

    /// One call to Apple's gateway by operation and outcome (``appleOutcomes``).
    public func appleRequest(operation: String, outcome: String) {
        appleCounter(operation, outcome).increment()
    }

    /// Makes every operation's outcome series, so that they are there, at 0, from the start.
    public func prepareAppleRequests(_ operations: [String]) {
        preparePairs(operations, Self.appleOutcomes, appleCounter)
    }

    private func appleCounter(_ operation: String, _ outcome: String) -> Counter {
        pairCounter(
            in: appleCounters, Self.name("apple_requests", unit: "total", "Calls to Apple's gateway by operation and outcome"),
            ("operation", operation), ("outcome", outcome))
    }

    /// The counter of `descriptor` with the labels `first` and `second`, cached under their values.
    private func pairCounter(
        in cache: borrowing Mutex<[LabelPair: Counter]>, _ descriptor: MetricNameDescriptor, _ first: (String, String),
        _ second: (String, String)
    ) -> Counter {
        Self.counter(in: cache, for: LabelPair(first: first.1, second: second.1)) {
            registry.makeCounter(descriptor: descriptor, labels: [first, second])
        }
    }

    public func decrypt(outcome: OperationOutcome<PaymentTokenError.Code>, duration: Duration) {
        decryptOutcome(outcome).increment()
        decryptDuration.record(duration)
    }

    private func decryptOutcome(_ outcome: OperationOutcome<PaymentTokenError.Code>) -> Counter {
        Self.counter(in: outcomeCounters, for: outcome.label) {
            registry.makeCounter(descriptor: Self.outcomes, labels: [("outcome", outcome.label)])
        }
    }

    /// One decrypt-endpoint call by the API key's name (never the key) and its outcome: what a
    /// tenant's decryptions add up to, for the audit of who reads card data.
    public func decryptRequest(apiKey: String, outcome: DecryptRequestOutcome) {
        Self.counter(in: keyCounters, for: LabelPair(first: apiKey, second: outcome.label)) {
            registry.makeCounter(descriptor: Self.requestsByKey, labels: [("api_key", apiKey), ("outcome", outcome.label)])
        }.increment()
    }

    /// The counter cached under `labels`, made (and cached) on first use.
    private static func counter<Labels: Hashable & Sendable>(
        in cache: borrowing Mutex<[Labels: Counter]>, for labels: Labels, make: () -> Counter
    ) -> Counter {
        cache.withLock { counters in
            if let counter = counters[labels] { return counter }
            let counter = make()
            counters[labels] = counter
            return counter
        }
    }

    /// A vault operation (register, redeem, detokenize, …) by outcome: ok or the stable error code.
    public func vault(operation: VaultOperation, outcome: OperationOutcome<StableCode>, duration: Duration) {
        pairCounter(
            in: vaultCounters, Self.name("vault_operations", unit: "total", "Vault operations by operation and outcome"),
            ("operation", operation.label), ("outcome", outcome.label)
        ).increment()
        vaultDuration.record(duration)
    }

    /// One call to a processor upstream, by format and outcome (``upstreamOutcomes``), and its
    /// latency by format.
    public func upstream(format: String, outcome: UpstreamOutcome, duration: Duration) {
        upstreamCounter(format, outcome.rawValue).increment()
        let histogram = upstreamDurations.withLock { histograms in
            if let histogram = histograms[format] { return histogram }
            let histogram = registry.makeDurationHistogram(
                descriptor: Self.name("upstream_duration", unit: "seconds", "Time for one call to a processor upstream, by format"),
                labels: [("format", format)],
                buckets: [
                    .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                    .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30),
                ])
            histograms[format] = histogram
            return histogram
        }
        histogram.record(duration)
    }

    /// Makes each relayed format's fixed outcome series (``upstreamOutcomes``), so that they are
    /// there, at 0, from the start.
    public func prepareUpstreams(_ formats: [String]) {
        preparePairs(formats, Self.upstreamOutcomes, upstreamCounter)
    }

    /// Makes the counter of every pair of `firsts` and `seconds` labels.
    private func preparePairs(_ firsts: [String], _ seconds: [String], _ counter: (String, String) -> Counter) {
        for first in firsts {
            for second in seconds { _ = counter(first, second) }
        }
    }

    private func upstreamCounter(_ format: String, _ outcome: String) -> Counter {
        pairCounter(
            in: upstreamCounters, Self.name("upstream_requests", unit: "total", "Calls to processor upstreams by format and outcome"),
            ("format", format), ("outcome", outcome))
    }

    /// What the vault's maintenance did: registration payloads destroyed and tombstones deleted
    /// by the purge, rows moved off rotated-out keys, keys destroyed.
    public func vaultMaintenance(_ kind: VaultMaintenanceKind, _ count: Int) {
        guard count > 0 else { return }
        vaultMaintenanceCounter(kind).increment(by: Int64(count))
    }

    private func vaultMaintenanceCounter(_ kind: VaultMaintenanceKind) -> Counter {
        registry.makeCounter(
            descriptor: Self.name("vault_maintenance", unit: "total", "Vault purge and rotation work done, by kind"),
            labels: [("kind", kind.rawValue)])
    }

    /// Merchant-token work by outcome: notifications received, repeated or refused, events
    /// applied, retried or failed, payment sessions.
    public func merchantTokenEvent(_ outcome: MerchantTokenOutcome) {
        merchantTokenCounter(outcome.rawValue).increment()
    }

    /// A payment session Apple's gateway refused, by the gateway error's code.
    public func paymentSessionFailed(code: String) {
        merchantTokenCounter("payment_session_\(code)").increment()
    }

    private func merchantTokenCounter(_ outcome: String) -> Counter {
        Self.counter(in: outcomeCounters, for: "merchant_token:" + outcome) {
            registry.makeCounter(
                descriptor: Self.name("merchant_token_events", unit: "total", "Merchant-token notifications, events and calls by outcome"),
                labels: [("outcome", outcome)])
        }
    }

    public func recycled() { recycles.increment() }

    public func setInFlight(_ count: Int) { inFlight.set(to: Double(count)) }

    public func setDatabaseAvailable(_ available: Bool) { databaseAvailable.set(to: available ? 1 : 0) }

    public func replayLedgerPurged(_ rows: Int) { replayPurged.increment(by: Int64(rows)) }

    /// An audit line the file has and syslog did not take.
    public func auditSyslogFailure() { auditSyslogFailures.increment() }

    /// A replay-ledger operation that failed outside a request (the purge); a claim that fails
    /// counts as a decryption refused with `database_unavailable`.
    public func replayLedgerFailed(_ operation: String) {
        replayLedgerErrors(operation).increment()
    }

    private func replayLedgerErrors(_ operation: String) -> Counter {
        registry.makeCounter(
            descriptor: Self.name("replay_ledger_errors", unit: "total", "Replay-ledger work that failed outside a request, by operation"),
            labels: [("operation", operation)])
    }

    public func setPaths(ecdh: String?, rsa: String?) {
        registry.makeGauge(descriptor: Self.paths, labels: [("operation", "ecdh"), ("path", ecdh ?? "none")]).set(to: 1)
        registry.makeGauge(descriptor: Self.paths, labels: [("operation", "rsa_oaep"), ("path", rsa ?? "none")]).set(to: 1)
    }

    /// 1 for each token version the HSM can decrypt, 0 for those its capability probe found no path for.
    public func setDecryptableVersions(_ versions: [PaymentTokenVersion: Bool]) {
        for (version, decryptable) in versions {
            registry.makeGauge(
                descriptor: Self.name(
                    "hsm_token_version_decryptable", unit: "",
                    "1 when the HSM can decrypt tokens of this version, 0 when it lacks the key operation (see hsm status)"),
                labels: [("version", version.rawValue)]
            ).set(to: decryptable ? 1 : 0)
        }
    }

    /// 1 when the HSM runs everything the vault needs (data-key wrapping and HMAC), 0 when it lacks
    /// part of it: registrations, redemptions and stored tokens are then refused as `hsm_capability_missing`.
    public func setVaultUsable(_ usable: Bool) {
        registry.makeGauge(
            descriptor: Self.name(
                "hsm_vault_usable", unit: "", "1 when the HSM runs what the vault needs, 0 when it lacks part of it (see hsm status)"),
            labels: []
        ).set(to: usable ? 1 : 0)
    }

    /// The module failed a key operation on a token's bytes and then ran it correctly on bytes of
    /// its own: the token was refused as `decryption_failed`, and the HSM kept in service.
    public func hsmFailureOnInput(operation: String) {
        registry.makeCounter(
            descriptor: Self.name(
                "hsm_failures_on_input", unit: "total",
                "Key operations the module failed on a token's bytes while it passed its health check just after, by operation"),
            labels: [("operation", operation)]
        ).increment()
    }

    /// `mode`: `inline` or `pool` (``HSM/dispatch``).
    public func setDispatch(_ mode: String) {
        for candidate in ["inline", "pool"] {
            registry.makeGauge(descriptor: Self.dispatch, labels: [("mode", candidate)]).set(to: candidate == mode ? 1 : 0)
        }
    }

    public func setReady(_ ready: Bool) {
        registry.makeGauge(descriptor: Self.readiness).set(to: ready ? 1 : 0)
    }

    /// Days until each certificate expires, by key; keys gone since the last call are dropped.
    /// A certificate's days left, labelled with its key, merchant, purpose and state (a retired key's
    /// certificate is still reported, and alerts leave it out by its state).
    public struct CertificateDaysLeft: Sendable {
        public let keyID, merchant, purpose, state: String
        public let days: Int

        public init(keyID: String, merchant: String, purpose: String, state: String, days: Int) {
            (self.keyID, self.merchant, self.purpose, self.state, self.days) = (keyID, merchant, purpose, state, days)
        }

        var labels: [String] { [keyID, merchant, purpose, state] }
    }

    public func setCertificates(_ certificates: [CertificateDaysLeft], keyCount: Int) {
        activeKeys.set(to: Double(keyCount))
        let current = Set(certificates.map(\.labels))
        for certificate in certificates {
            registry.makeGauge(descriptor: Self.certificateDaysLeft, labels: Self.certificateLabels(certificate.labels)).set(
                to: Double(certificate.days))
        }
        let gone = certificateDays.withLock { known in
            defer { known = current }
            return known.subtracting(current)
        }
        for labels in gone {
            registry.unregisterGauge(registry.makeGauge(descriptor: Self.certificateDaysLeft, labels: Self.certificateLabels(labels)))
        }
    }

    /// The keys that could not be read at the last listing; keys readable again are dropped.
    public func setUnreadableKeys(_ keyIDs: Set<String>) {
        for keyID in keyIDs { registry.makeGauge(descriptor: Self.unreadableKey, labels: [("key_id", keyID)]).set(to: 1) }
        let readable = unreadableKeyIDs.withLock { known in
            defer { known = keyIDs }
            return known.subtracting(keyIDs)
        }
        for keyID in readable { registry.unregisterGauge(registry.makeGauge(descriptor: Self.unreadableKey, labels: [("key_id", keyID)])) }
    }

    private static func certificateLabels(_ values: [String]) -> [(String, String)] {
        Array(zip(["key_id", "merchant", "purpose", "state"], values))
    }

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] {
        if let pending = pendingSource.withLock({ $0 }) { hsmPending.set(to: Double(pending())) }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}
