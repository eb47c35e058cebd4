import Foundation
import KeyCustody
import Logging
import PKCS11
import ServiceLifecycle
import Synchronization

/// Keeps the HSM usable while the service runs: re-reads the key map (admins add, rotate and
/// retire keys from other processes), checks the login, re-establishes a lost HSM, recycles the
/// module every N decryptions (SoftHSM 2.6.1 leaks per derive until `C_Finalize`), and keeps
/// the HSM's readiness and the key gauges current.
public final class HSMMaintenanceService: Service, Sendable {
    let decryption: DecryptionService
    let metrics: ServerMetrics
    let refreshInterval: Duration
    let logger: Logger
    /// Whether the HSM can be used: decided here only, read by the decrypt path too.
    let hsmReadiness: HSMReadiness
    /// The token versions this HSM can never decrypt (its probe's gaps, fixed for its life).
    private let cannotDecrypt: [String]
    /// The features this HSM can never serve (its probe's gaps, fixed for its life).
    private let cannotRun: [String]
    /// The keys reported unreadable at the last listing, to log each once.
    private let unreadable = Mutex<Set<String>>([])
    /// When the last successful health check began: faults from before it are already answered.
    private let health = HSMHealthRecord()
    /// Whether the last refresh could not read the key records (logged once per outage).
    private let recordsUnavailable = Atomic<Bool>(false)
    /// Whether a key map was ever loaded: until one is, unreadable key records leave the service
    /// not ready (an empty key map would refuse every token as unknown).
    private let keyMapLoaded = Atomic<Bool>(false)
    /// Set once the database is migrated: the key records are read from it, so no refresh runs before.
    private let databasePrepared = Atomic<Bool>(false)

    public init(decryption: DecryptionService, metrics: ServerMetrics, refreshInterval: Duration, logger: Logger) {
        self.decryption = decryption
        self.hsmReadiness = decryption.readiness
        self.cannotDecrypt = HSMPaymentKeys.decryptableVersions(decryption.hsm).filter { !$0.value }.map(\.key.rawValue).sorted()
        self.cannotRun = decryption.hsm.dataProtectionGaps.isEmpty ? [] : ["vault"]
        self.metrics = metrics
        self.refreshInterval = refreshInterval
        self.logger = logger
    }

    /// Whether the HSM is logged in and the key map loaded.
    public var isReady: Bool { hsmReadiness.isReady }

    /// What `/readyz` reports: a stable code when not ready; the operator's explanation (which can
    /// name files, modules and settings) goes to the log only, since the route needs no API key.
    public func readiness() -> Readiness {
        let capabilities = decryption.hsm.capabilities
        let database = decryption.database.isAvailable
        let hsmReason =
            decryption.hsm.pinRefused
            ? "hsm_pin_refused" : recordsUnavailable.load(ordering: .relaxed) ? "database_unavailable" : "hsm_unavailable"
        return Readiness(
            ready: isReady && database, keys: decryption.keys.count, ecdhPath: capabilities.ecdhPath?.rawValue ?? "none",
            rsaPath: capabilities.rsaDecryptionPath?.rawValue ?? "none", database: decryption.database.database.driver,
            reason: !isReady ? hsmReason : database ? nil : "database_unavailable",
            cannotDecrypt: cannotDecrypt, cannotRun: cannotRun
        )
    }

    /// The first refresh, once the database holding the key records is migrated (the service
    /// runs from before the listener starts, and the migration with it).
    public func databaseIsPrepared() async {
        databasePrepared.store(true, ordering: .relaxed)
        await refresh()
    }

    public func run() async throws {
        if databasePrepared.load(ordering: .relaxed) { await refresh() }
        // Graceful shutdown cancels the loops; ending is then the normal way out, not an error.
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                // Recycle as soon as the decrypt path asks, so the cadence follows the load.
                group.addTask {
                    for await due in self.decryption.recycleRequests { await self.recycle(after: due) }
                }
                // A verified token the HSM failed: not ready at once, and a health check now,
                // unless a check that began after the request did has passed since.
                group.addTask {
                    for await fault in self.decryption.hsmFaults {
                        if self.health.isAnswered(fault) { continue }
                        self.setReady(false, reason: fault.reason)
                        await self.refresh()
                    }
                }
                group.addTask {
                    var sinceRefresh = Duration.zero
                    let tick = Duration.milliseconds(250)
                    while !Task.isCancelled {
                        try? await Task.sleep(for: tick)
                        sinceRefresh += tick
                        guard self.databasePrepared.load(ordering: .relaxed) else { continue }
                        if !Task.isCancelled, sinceRefresh >= self.refreshInterval || !self.isReady {
                            sinceRefresh = .zero
                            await self.refresh()
                        }
                    }
                }
            }
        }
    }

    /// One health check and key-map reload; on failure, an attempt to re-establish the HSM when
    /// the HSM's pacing allows one. Attempts after failures are paced exponentially (250 ms up to
    /// 30 s), and a PIN the token refused is never presented again (see `LoginGuard`), so a
    /// wrong PIN cannot lock the token however long the service runs.
    public func refresh() async {
        let failure: any Error
        do {
            try await reload()
            return
        } catch {
            failure = error
        }
        setReady(false, reason: Self.describe(failure))
        let hsm = decryption.hsm
        // An HSM that stops answering is not helped by a recycle, which would wait for the
        // stuck calls first: probe again at the next tick instead.
        if let error = failure as? PKCS11Error, error.code == .timedOut { return }
        // While a pause after a failed attempt runs, nothing is tried (and nothing logged again).
        if case .pausing? = hsm.loginGuardHold { return }
        do {
            try await hsm.recycle()
            metrics.recycled()
            try await reload()
        } catch {
            setReady(false, reason: Self.describe(error))
        }
    }

    private func reload() async throws {
        let started = ContinuousClock.now
        // Inline dispatch turns to pool when a call overruns its deadline (the HSM logs it then).
        metrics.setDispatch(decryption.hsm.dispatch.rawValue)
        try await decryption.hsm.checkHealth()
        // One read of the HSM and the key records serves both the key map and the certificate gauges.
        let inventory: KeyInventory
        do throws(CustodyError) {
            inventory = try await decryption.store.inventory()
        } catch {
            guard error.code == .storage || error.code == .databaseUnavailable else { throw error }
            // The database holding the key records failed, not the HSM: the key map keeps what
            // it has until the next refresh reads them; before a first one was loaded, the
            // service is not ready (readiness says database_unavailable).
            health.checkPassed(startedAt: started)
            if !recordsUnavailable.exchange(true, ordering: .relaxed) {
                logger.warning(
                    "the key records could not be read; the key map is kept as it was until they can be",
                    metadata: ["error": "\(error.message)", "key_map_loaded": "\(keyMapLoaded.load(ordering: .relaxed))"])
            }
            setReady(keyMapLoaded.load(ordering: .relaxed), reason: "the key records cannot be read: \(error.message)")
            return
        }
        recordsUnavailable.store(false, ordering: .relaxed)
        keyMapLoaded.store(true, ordering: .relaxed)
        let count = decryption.keys.reload(from: inventory)
        reportUnreadable(inventory.unreadable)
        let now = Date()
        let days = inventory.keys.compactMap { key -> ServerMetrics.CertificateDaysLeft? in
            guard let days = key.daysLeft(at: now) else { return nil }
            return ServerMetrics.CertificateDaysLeft(
                keyID: key.id.hex, merchant: key.merchantID ?? "unknown", purpose: key.purpose.rawValue, state: key.state.rawValue,
                days: days)
        }
        metrics.setCertificates(days, keyCount: count)
        health.checkPassed(startedAt: started)
        setReady(true, reason: nil)
    }

    /// Logs each key whose objects cannot be read when it first becomes unreadable (its entry in
    /// the key map is kept), and keeps the per-key gauge current.
    private func reportUnreadable(_ keys: [UnreadableMerchantKey]) {
        let ids = Set(keys.map(\.id.hex))
        let new = unreadable.withLock { known in
            defer { known = ids }
            return ids.subtracting(known)
        }
        for key in keys where new.contains(key.id.hex) {
            logger.error(
                "a key in the HSM cannot be read; it is skipped, and keeps its earlier key-map entry if it had one",
                metadata: ["key_id": "\(key.id.hex)", "reason": "\(key.reason)"])
        }
        metrics.setUnreadableKeys(ids)
    }

    private func setReady(_ value: Bool, reason: String?) {
        hsmReadiness.update(ready: value, reason: reason)
    }

    private func recycle(after decryptions: Int) async {
        do {
            let elapsed = try await decryption.hsm.recycle()
            metrics.recycled()
            logger.info("HSM module recycled", metadata: ["after_decryptions": "\(decryptions)", "duration": "\(elapsed)"])
        } catch {
            setReady(false, reason: "recycle failed: \(Self.describe(error))")
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case let error as PKCS11Error: OperatorAdvice.describe(error)
        case let error as CustodyError: OperatorAdvice.describe(error)
        default: "\(error)"
        }
    }
}
