import ApplePay
import Foundation
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
    }

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

    public func request(route: String, status: Int) {
        Self.counter(in: requestCounters, for: RequestLabels(route: route, status: status)) {
            registry.makeCounter(descriptor: Self.requests, labels: [("route", route), ("status", String(status))])
        }.increment()
    }

    public func decrypt(outcome: String, duration: Duration) {
        Self.counter(in: outcomeCounters, for: outcome) {
            registry.makeCounter(descriptor: Self.outcomes, labels: [("outcome", outcome)])
        }.increment()
        decryptDuration.record(duration)
    }

    /// One decrypt-endpoint call by the API key's name (never the key) and its outcome: what a
    /// tenant's decryptions add up to, for the audit of who reads card data.
    public func decryptRequest(apiKey: String, outcome: String) {
        Self.counter(in: keyCounters, for: LabelPair(first: apiKey, second: outcome)) {
            registry.makeCounter(descriptor: Self.requestsByKey, labels: [("api_key", apiKey), ("outcome", outcome)])
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
    public func vault(operation: String, outcome: String, duration: Duration) {
        Self.counter(in: vaultCounters, for: LabelPair(first: operation, second: outcome)) {
            registry.makeCounter(
                descriptor: Self.name("vault_operations", unit: "total", "Vault operations by operation and outcome"),
                labels: [("operation", operation), ("outcome", outcome)])
        }.increment()
        vaultDuration.record(duration)
    }

    /// One call to a processor upstream, by format and outcome (`ok`, `http_<status>`,
    /// `unreachable`, `timeout`, `too_large`), and its latency by format.
    public func upstream(format: String, outcome: String, duration: Duration) {
        Self.counter(in: upstreamCounters, for: LabelPair(first: format, second: outcome)) {
            registry.makeCounter(
                descriptor: Self.name("upstream_requests", unit: "total", "Calls to processor upstreams by format and outcome"),
                labels: [("format", format), ("outcome", outcome)])
        }.increment()
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

    /// What the vault's maintenance did: registration payloads destroyed and tombstones deleted
    /// by the purge, rows moved off rotated-out keys, keys destroyed.
    public func vaultMaintenance(_ what: String, _ count: Int) {
        guard count > 0 else { return }
        registry.makeCounter(
            descriptor: Self.name("vault_maintenance", unit: "total", "Vault purge and rotation work done, by kind"),
            labels: [("kind", what)]
        ).increment(by: Int64(count))
    }

    /// Merchant-token work by outcome: notifications received, repeated or refused, events
    /// applied, retried or failed, payment sessions.
    public func merchantTokenEvent(_ outcome: String) {
        Self.counter(in: outcomeCounters, for: "merchant_token:" + outcome) {
            registry.makeCounter(
                descriptor: Self.name("merchant_token_events", unit: "total", "Merchant-token notifications, events and calls by outcome"),
                labels: [("outcome", outcome)])
        }.increment()
    }

    public func recycled() { recycles.increment() }

    public func setInFlight(_ count: Int) { inFlight.set(to: Double(count)) }

    public func setDatabaseAvailable(_ available: Bool) { databaseAvailable.set(to: available ? 1 : 0) }

    public func replayLedgerPurged(_ rows: Int) { replayPurged.increment(by: Int64(rows)) }

    /// A replay-ledger operation that failed outside a request (the purge); a claim that fails
    /// counts as a decryption refused with `database_unavailable`.
    public func replayLedgerFailed(_ operation: String) {
        registry.makeCounter(
            descriptor: Self.name("replay_ledger_errors", unit: "total", "Replay-ledger work that failed outside a request, by operation"),
            labels: [("operation", operation)]
        ).increment()
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
    public func setCertificates(_ days: [(keyID: String, merchant: String, days: Int)], keyCount: Int) {
        activeKeys.set(to: Double(keyCount))
        let current = Set(days.map { [$0.keyID, $0.merchant] })
        for (keyID, merchant, value) in days {
            registry.makeGauge(descriptor: Self.certificateDaysLeft, labels: [("key_id", keyID), ("merchant", merchant)]).set(
                to: Double(value))
        }
        let gone = certificateDays.withLock { known in
            defer { known = current }
            return known.subtracting(current)
        }
        for labels in gone {
            registry.unregisterGauge(
                registry.makeGauge(descriptor: Self.certificateDaysLeft, labels: [("key_id", labels[0]), ("merchant", labels[1])]))
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

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}
