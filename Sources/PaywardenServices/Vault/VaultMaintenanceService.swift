import Foundation
import Logging
import ServiceLifecycle
import Vault

/// The vault's background work, on every instance: re-reads the vault keys (a rotation made by
/// the CLI or another instance takes effect), purges expired registrations (payloads destroyed
/// when they expire, not when someone next reads them), and moves rows off rotated-out keys,
/// destroying each key nothing uses any more. Each step is idempotent, so instances sharing a
/// database and HSM may run it at once.
public final class VaultMaintenanceService: Service, Sendable {
    let vault: CardVault
    let database: DatabaseHealthService
    let metrics: ServerMetrics
    let interval: Duration
    let logger: Logger

    public init(vault: CardVault, database: DatabaseHealthService, metrics: ServerMetrics, interval: Duration, logger: Logger) {
        self.vault = vault
        self.database = database
        self.metrics = metrics
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.interval)
                guard !Task.isCancelled, self.database.isAvailable else { continue }
                await self.runOnce()
            }
        }
    }

    /// One round of the work; failures are logged and the next round tries again.
    public func runOnce() async {
        do {
            try await vault.keyring.refresh()
            let purge = try await vault.purgeRegistrations()
            metrics.vaultMaintenance(.registrationPayloadsDestroyed, purge.payloadsDestroyed)
            metrics.vaultMaintenance(.registrationTombstonesDeleted, purge.tombstonesDeleted)
            if purge.payloadsDestroyed + purge.tombstonesDeleted > 0 {
                logger.info(
                    "expired registrations purged",
                    metadata: ["payloads": "\(purge.payloadsDestroyed)", "tombstones": "\(purge.tombstonesDeleted)"])
            }
            let unlinked = try await vault.purgeUnlinkedTokens()
            metrics.vaultMaintenance(.unlinkedTokensDeleted, unlinked)
            if unlinked > 0 { logger.info("unlinked tokens deleted after their retention", metadata: ["tokens": "\(unlinked)"]) }
            // Bounded per round so a large re-wrap never holds the HSM from payments for long.
            var moved = 0
            for _ in 0..<10 {
                let step = try await vault.rotationStep()
                moved += step.moved
                for key in step.destroyed {
                    logger.notice(
                        "rotated-out vault key destroyed: nothing uses it",
                        metadata: ["purpose": "\(key.purpose.rawValue)", "key": "\(key.id)"])
                }
                metrics.vaultMaintenance(.vaultKeysDestroyed, step.destroyed.count)
                if step.moved == 0 { break }
            }
            metrics.vaultMaintenance(.rowsMovedToCurrentKey, moved)
        } catch {
            metrics.vaultMaintenance(.failedRounds, 1)
            logger.warning("vault maintenance did not finish; it runs again", metadata: ["error": "\(error)"])
        }
    }
}
