import Foundation
import Logging
import PaywardenStorage
import ServiceLifecycle
import Synchronization

/// Keeps the database's availability current (readiness, and the decrypt path's fast 503) and
/// purges the replay ledger's expired rows. Checks once a second; a failed statement anywhere
/// marks the database unavailable at once, and the next successful check restores it, so the
/// service recovers without a restart when the database comes back.
public final class DatabaseHealthService: Service, Sendable {
    let database: any PaywardenDatabase
    let metrics: ServerMetrics
    let logger: Logger
    let checkInterval: Duration
    let purgeInterval: Duration
    /// Rows deleted per purge statement, so a purge never holds the ledger long.
    public static let purgeBatch = 5000
    private let available = Atomic<Bool>(false)
    private let consecutiveFailures = Atomic<Int>(0)

    public init(
        database: any PaywardenDatabase, metrics: ServerMetrics, logger: Logger, checkInterval: Duration = .seconds(1),
        purgeInterval: Duration = .seconds(60)
    ) {
        self.database = database
        self.metrics = metrics
        self.logger = logger
        self.checkInterval = checkInterval
        self.purgeInterval = purgeInterval
    }

    public var isAvailable: Bool { available.load(ordering: .relaxed) }

    /// A statement failed with `error`. Three such failures in a row (one could be a busy pool's
    /// wait) mark the database unavailable until the next successful check; a schema or data
    /// error is logged whole, with the table and row it names.
    public func failed(_ error: any Error) {
        guard let error = error as? StorageError else { return }
        guard error.category == .unavailable else {
            logger.error("the database answered with an error", metadata: ["error": "\(error)"])
            return
        }
        if consecutiveFailures.add(1, ordering: .relaxed).newValue >= Self.failuresBeforeUnavailable {
            setAvailable(false, error)
        }
    }

    /// A statement succeeded: the failure count starts again.
    public func succeeded() {
        if consecutiveFailures.load(ordering: .relaxed) != 0 { consecutiveFailures.store(0, ordering: .relaxed) }
    }

    public static let failuresBeforeUnavailable = 3
    /// How far behind "now" the purge stays, so an instance whose clock runs ahead never deletes
    /// a claim another instance still counts as inside the signing-time window.
    public static let purgeMargin: TimeInterval = 300

    /// The schema is current and a round trip worked (start-up).
    public func started() {
        setAvailable(true, nil)
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var sincePurge = Duration.zero
            while !Task.isCancelled {
                try? await Task.sleep(for: self.checkInterval)
                guard !Task.isCancelled else { return }
                await self.check()
                sincePurge += self.checkInterval
                if sincePurge >= self.purgeInterval, self.isAvailable {
                    sincePurge = .zero
                    await self.purge()
                }
            }
        }
    }

    public func check() async {
        do {
            try await database.checkConnection()
            consecutiveFailures.store(0, ordering: .relaxed)
            setAvailable(true, nil)
            await database.performMaintenance()
        } catch {
            setAvailable(false, error)
        }
    }

    /// Deletes replay-ledger rows expired for longer than ``purgeMargin``, in batches.
    public func purge(now: Date = Date()) async {
        let now = now.addingTimeInterval(-Self.purgeMargin)
        var purged = 0
        do {
            while !Task.isCancelled {
                let batch = try await database.purgeExpiredTransactions(now: now, limit: Self.purgeBatch)
                purged += batch
                if batch < Self.purgeBatch { break }
            }
        } catch {
            failed(error)
            metrics.replayLedgerFailed("purge")
            logger.warning("the replay ledger purge stopped", metadata: ["error": "\(error)"])
        }
        if purged > 0 {
            metrics.replayLedgerPurged(purged)
            logger.debug("replay ledger purged", metadata: ["rows": "\(purged)"])
        }
    }

    private func setAvailable(_ value: Bool, _ error: (any Error)?) {
        let was = available.exchange(value, ordering: .relaxed)
        metrics.setDatabaseAvailable(value)
        guard was != value else { return }
        if value {
            logger.info("database available", metadata: ["driver": "\(database.driver)"])
        } else {
            logger.error(
                "database unavailable: decryptions are refused (503 database_unavailable) until it answers again",
                metadata: ["driver": "\(database.driver)", "error": "\(error.map { "\($0)" } ?? "")"])
        }
    }
}
