import Foundation
import KeyCustody
import Logging
import OutboundTLS
import PaywardenServices
import PaywardenStorage
import Synchronization
import Vault

/// The outbox: each recorded event claimed, fetched from Apple, applied to the vault and stored
/// with its outcome; failures retried with back-off while Apple keeps the event.
extension MerchantTokenService {
    /// Deletes applied and failed events older than the retention, in bounded batches; returns how many.
    public func purgeSettledEvents() async -> Int {
        let before = vault.now.addingTimeInterval(-policy.eventRetention)
        var deleted = 0
        for _ in 0..<10 {
            guard let batch = try? await events.deleteSettledEvents(before: before, limit: 500) else { break }
            deleted += batch
            if batch < 500 { break }
        }
        if deleted > 0 { logger.info("merchant-token events past their retention deleted", metadata: ["events": "\(deleted)"]) }
        return deleted
    }

    /// Fetches and applies the events that are due, oldest first, up to `limit`; returns how many
    /// it attempted. Failures are kept on each event, never thrown.
    public func processDueEvents(limit: Int = 20) async -> Int {
        let due: [MerchantTokenEventRecord]
        do {
            due = try await events.dueEvents(at: vault.now, limit: limit)
        } catch {
            logger.warning("merchant-token events could not be read", metadata: ["error": "\(error)"])
            return 0
        }
        for record in due { _ = try? await process(record) }
        return due.count
    }

    /// One attempt at `record`: claimed (so another instance skips it while the lease lasts),
    /// fetched from Apple, applied to the vault, and stored with its outcome. Nil when another
    /// instance claimed it first.
    @discardableResult
    public func process(_ record: MerchantTokenEventRecord) async throws(MerchantTokenFailure) -> MerchantTokenEventRecord? {
        let now = vault.now
        var claimed = record
        claimed.attempts += 1
        claimed.nextAttemptAt = now.addingTimeInterval(policy.lease)
        claimed.updatedAt = now
        // Visible to admins, and what tells `retry` the event is someone's right now.
        claimed.effect = Self.inProgress
        guard try await store(claimed, expectedAttempts: record.attempts) else { return nil }
        var outcome = claimed
        do {
            let details = try await gateway.merchantTokenEvent(merchantID: record.merchantIdentifier, eventID: record.id)
            outcome.eventType = details.eventType
            outcome.merchantTokenID = details.merchantTokenIdentifier
            outcome.detail = details.recordedJSON
            let effect = try await vault.applyMerchantTokenEvent(
                type: details.eventType, merchantTokenID: details.merchantTokenIdentifier, metadata: details.metadataJSON)
            let usage = try await applyToUsageInformation(type: details.eventType, merchantTokenID: details.merchantTokenIdentifier)
            outcome.state = .applied
            outcome.effect = usage.map { "\(effect.summary); \($0)" } ?? effect.summary
            outcome.lastError = nil
        } catch let error as AppleGatewayError {
            failed(&outcome, reason: "\(error.code.rawValue): \(error.message)", retryable: Self.isWorthRetrying(error))
        } catch let error as VaultError {
            failed(&outcome, reason: "\(error.code.rawValue): \(error.message)", retryable: error.category == .unavailable)
        } catch let error as MerchantTokenFailure {
            // Usage information's own refusals (Apple's 400/403/404, a package that cannot be sealed) do not pass later.
            failed(&outcome, reason: "\(error.code.rawValue): \(error.message)", retryable: error.isTemporary)
        } catch {
            failed(&outcome, reason: "\(error)", retryable: true)
        }
        outcome.updatedAt = vault.now
        guard try await store(outcome, expectedAttempts: claimed.attempts) else {
            logger.warning(
                "a merchant-token event was moved by someone else during its attempt; their outcome stands",
                metadata: ["merchant": "\(record.merchantIdentifier)", "event": "\(record.id)"])
            return nil
        }
        metrics?.merchantTokenEvent(outcome.state == .applied ? .applied : outcome.state == .failed ? .failed : .retry)
        pending.withLock { $0.readAt = nil }
        // An event that failed for good may leave a token usable that Apple unlinked: an error.
        let level: Logger.Level = outcome.state == .applied ? .info : outcome.state == .failed ? .error : .warning
        logger.log(
            level: level, "merchant-token event attempted",
            metadata: [
                "merchant": "\(record.merchantIdentifier)", "event": "\(record.id)", "attempt": "\(outcome.attempts)",
                "state": "\(outcome.state.rawValue)", "type": "\(outcome.eventType ?? "-")", "effect": "\(outcome.effect ?? "-")",
                "error": "\(outcome.lastError ?? "-")",
            ])
        return outcome
    }

    public static let inProgress = "attempt in progress"

    /// Apple's 404 may come before its event is ready, and 401/403 while a new identity
    /// certificate propagates at Apple: worth trying again within the seven days, unlike a 400.
    public static func isWorthRetrying(_ error: AppleGatewayError) -> Bool {
        error.isRetryable || error.code == .eventNotFound || (error.code == .appleRefused && [401, 403].contains(error.appleStatus))
    }

    /// A failed attempt: tried again with back-off while Apple still keeps the event (seven days),
    /// failed for good otherwise or when trying again cannot help.
    private func failed(_ record: inout MerchantTokenEventRecord, reason: String, retryable: Bool) {
        record.lastError = String(reason.prefix(512))
        record.effect = nil
        let now = vault.now
        let next = now.addingTimeInterval(policy.backoff(afterAttempt: record.attempts))
        if retryable && next < record.receivedAt.addingTimeInterval(policy.appleRetention) {
            record.state = .pending
            record.nextAttemptAt = next
        } else {
            record.state = .failed
            record.nextAttemptAt = now
        }
    }

    private func store(_ record: MerchantTokenEventRecord, expectedAttempts: Int) async throws(MerchantTokenFailure) -> Bool {
        do {
            return try await events.updateEvent(record, expectedAttempts: expectedAttempts)
        } catch {
            throw MerchantTokenFailure(error)
        }
    }

    /// An admin's retry of one event (`paywarden merchant-tokens retry`): due now, attempted now.
    public func retry(eventID: String, user: String) async throws(MerchantTokenFailure) -> MerchantTokenEventRecord {
        let stored: MerchantTokenEventRecord?
        do {
            stored = try await events.event(id: eventID)
        } catch {
            throw MerchantTokenFailure(error)
        }
        guard var record = stored else {
            throw MerchantTokenFailure(.eventNotFound, "no merchant-token event \(eventID) was recorded")
        }
        guard record.state != .applied else {
            throw MerchantTokenFailure(.eventApplied, "event \(eventID) was applied already: \(record.effect ?? "")")
        }
        guard !(record.state == .pending && record.effect == Self.inProgress && record.nextAttemptAt > vault.now) else {
            throw MerchantTokenFailure(
                .eventBusy, "an attempt at event \(eventID) is under way; `merchant-tokens events` shows its outcome")
        }
        let expected = record.attempts
        record.state = .pending
        record.nextAttemptAt = vault.now
        guard try await store(record, expectedAttempts: expected) else {
            throw MerchantTokenFailure(.eventBusy, "another instance is attempting event \(eventID); try again shortly")
        }
        guard let outcome = try await process(record) else {
            throw MerchantTokenFailure(.eventBusy, "another instance is attempting event \(eventID); try again shortly")
        }
        await writeAudit(
            user: user, action: "merchant-tokens.retry", merchantID: record.merchantIdentifier, result: outcome.state.rawValue,
            detail: "event \(eventID)")
        return outcome
    }
}
