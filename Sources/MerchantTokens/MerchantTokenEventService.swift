import Foundation
import Logging
import PaywardenServices
import ServiceLifecycle

/// The outbox's worker, on every instance: wakes when a notification is recorded (so an UNLINK
/// reaches the vault within a second) and every poll interval otherwise (retries that came due,
/// events another instance recorded). Instances sharing a database claim events before fetching
/// them, so each is fetched once per attempt.
public final class MerchantTokenEventService: Service, Sendable {
    let merchantTokens: MerchantTokenService
    let database: DatabaseHealthService
    let pollInterval: Duration

    public init(merchantTokens: MerchantTokenService, database: DatabaseHealthService, pollInterval: Duration) {
        self.merchantTokens = merchantTokens
        self.database = database
        self.pollInterval = pollInterval
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var sinceLastRound = Duration.zero
            var sincePurge = Duration.seconds(3600)
            let step = Duration.milliseconds(100)
            while !Task.isCancelled {
                try? await Task.sleep(for: step)
                sinceLastRound += step
                sincePurge += step
                let woken = self.merchantTokens.takeWakeUp()
                guard woken || sinceLastRound >= self.pollInterval, !Task.isCancelled, self.database.isAvailable else { continue }
                sinceLastRound = .zero
                if sincePurge >= .seconds(3600) {
                    sincePurge = .zero
                    _ = await self.merchantTokens.purgeSettledEvents()
                }
                // A bounded number of rounds, so one busy moment cannot hold the worker forever.
                for _ in 0..<5 where !Task.isCancelled {
                    if await self.merchantTokens.processDueEvents() == 0 { break }
                }
            }
        }
        // The gateway's HTTP clients live as long as the service that uses them.
        await merchantTokens.gateway.shutdown()
    }
}
