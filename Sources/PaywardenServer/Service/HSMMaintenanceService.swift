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
final class HSMMaintenanceService: Service, Sendable {
    let decryption: DecryptionService
    let metrics: ServerMetrics
    let refreshInterval: Duration
    let logger: Logger
    private let ready = Atomic<Bool>(false)

    init(decryption: DecryptionService, metrics: ServerMetrics, refreshInterval: Duration, logger: Logger) {
        self.decryption = decryption
        self.metrics = metrics
        self.refreshInterval = refreshInterval
        self.logger = logger
    }

    /// Whether the HSM is logged in and the key map loaded.
    var isReady: Bool { ready.load(ordering: .relaxed) }

    /// What `/readyz` reports: a stable code when not ready; the operator's explanation (which can
    /// name files, modules and settings) goes to the log only, since the route needs no API key.
    func readiness() -> Readiness {
        let capabilities = decryption.hsm.capabilities
        let database = decryption.database.isAvailable
        return Readiness(
            ready: isReady && database, keys: decryption.keys.count, ecdhPath: capabilities.ecdhPath?.rawValue ?? "none",
            rsaPath: capabilities.rsaDecryptionPath?.rawValue ?? "none", database: decryption.database.database.driver,
            reason: !isReady ? "hsm_unavailable" : database ? nil : "database_unavailable"
        )
    }

    func run() async throws {
        await refresh()
        // Graceful shutdown cancels both loops; ending is then the normal way out, not an error.
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                // Recycle as soon as the decrypt path asks, so the cadence follows the load.
                group.addTask {
                    for await due in self.decryption.recycleRequests { await self.recycle(after: due) }
                }
                group.addTask {
                    var sinceRefresh = Duration.zero
                    let tick = Duration.milliseconds(250)
                    while !Task.isCancelled {
                        try? await Task.sleep(for: tick)
                        sinceRefresh += tick
                        if !Task.isCancelled, sinceRefresh >= self.refreshInterval || !self.isReady {
                            sinceRefresh = .zero
                            await self.refresh()
                        }
                    }
                }
            }
        }
    }

    /// One health check and key-map reload; on failure, one attempt to re-establish the HSM.
    func refresh() async {
        do {
            try await reload()
        } catch {
            setReady(false, reason: Self.describe(error))
            do {
                try await decryption.hsm.recycle()
                metrics.recycled()
                try await reload()
            } catch {
                logger.error("HSM unavailable", metadata: ["error": "\(error)"])
            }
        }
    }

    private func reload() async throws {
        try await decryption.hsm.checkHealth()
        // One read of the HSM serves both the key map and the certificate gauges.
        let keys = try await decryption.store.list()
        let count = decryption.keys.reload(from: keys)
        let now = Date()
        let days = keys.compactMap { key -> (keyID: String, merchant: String, days: Int)? in
            guard key.state.decrypts, let days = key.daysLeft(at: now) else { return nil }
            return (key.id.hex, key.merchantID ?? "unknown", days)
        }
        metrics.setCertificates(days, keyCount: count)
        setReady(true, reason: nil)
    }

    private func setReady(_ value: Bool, reason: String?) {
        let was = ready.exchange(value, ordering: .relaxed)
        decryption.hsmAvailable.store(value, ordering: .relaxed)
        metrics.setReady(value)
        if was != value {
            if value {
                logger.info("ready: HSM logged in, key map loaded")
            } else {
                logger.error("not ready: the HSM cannot be used", metadata: ["reason": "\(reason ?? "")"])
            }
        }
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
