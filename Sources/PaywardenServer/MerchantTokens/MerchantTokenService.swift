import Foundation
import KeyCustody
import Logging
import OutboundTLS
import PaywardenStorage
import Synchronization
import Vault

/// Merchant tokens end to end: Apple's notifications recorded (an outbox in the database), each
/// event's details fetched from Apple over mutual TLS and applied to the vault, and the calls
/// merchants and admins make to Apple (unlink, notification URL, payment sessions). The HTTP
/// controllers, the background service and the CLI all go through it.
public final class MerchantTokenService: Sendable {
    public let gateway: AppleGatewayClient
    let vault: CardVault
    /// The outbox of Apple's events: recorded, claimed, settled and purged here.
    public let events: any EventStore
    let keys: MerchantKeyStore
    let metrics: ServerMetrics?
    let audit: AuditLog?
    let policy: MerchantTokenEventPolicy
    let logger: Logger
    private let knownMerchants = Mutex<KnownMerchants>(KnownMerchants())
    private let pending = Mutex<(count: Int, readAt: ContinuousClock.Instant?)>((0, nil))
    private let woken = Mutex(false)

    public init(
        gateway: AppleGatewayClient, vault: CardVault, events: any EventStore, keys: MerchantKeyStore, policy: MerchantTokenEventPolicy,
        metrics: ServerMetrics?, audit: AuditLog?, logger: Logger
    ) {
        self.gateway = gateway
        self.vault = vault
        self.events = events
        self.keys = keys
        self.policy = policy
        self.metrics = metrics
        self.audit = audit
        self.logger = logger
    }

    // MARK: Notifications

    /// Records Apple's notification of `eventID` for `merchantID`: true when it is new, false when
    /// it was recorded before (Apple repeats itself; nothing happens twice). Refuses, before any
    /// write, a merchant with no identity key here and more waiting events than the limit.
    func receiveNotification(merchantID: String, eventID: String) async throws(MerchantTokenFailure) -> Bool {
        guard Self.isIdentifier(merchantID, maximumLength: 128), Self.isIdentifier(eventID, maximumLength: 128) else {
            throw MerchantTokenFailure(.invalidRequest, "the merchant id or event id is malformed")
        }
        guard await isKnownMerchant(merchantID) else {
            throw MerchantTokenFailure(.unknownMerchant, "no merchant identity key for this merchant id")
        }
        guard try await pendingCount() < policy.pendingLimit else {
            // Apple repeating a notification already recorded is still answered 200.
            if (try? await events.event(id: eventID))?.map({ $0.merchantIdentifier == merchantID }) == true { return false }
            metrics?.merchantTokenEvent("refused_over_limit")
            throw MerchantTokenFailure(
                .overloaded, "\(policy.pendingLimit) merchant-token events are waiting to be fetched")
        }
        let record = MerchantTokenEventRecord(id: eventID, merchantIdentifier: merchantID, receivedAt: vault.now)
        let isNew: Bool
        do {
            isNew = try await events.recordEvent(record)
        } catch {
            throw MerchantTokenFailure(.databaseUnavailable, "the notification could not be recorded")
        }
        metrics?.merchantTokenEvent(isNew ? "received" : "repeated")
        if !isNew, let stored = try? await events.event(id: eventID), stored.merchantIdentifier != merchantID {
            // Apple's event ids are unique; one arriving for a second merchant is worth a look, not a second fetch.
            metrics?.merchantTokenEvent("id_for_another_merchant")
            logger.warning(
                "a notification repeated an event id recorded for another merchant; it is not fetched again",
                metadata: ["merchant": "\(merchantID)", "event": "\(eventID)", "recorded-for": "\(stored.merchantIdentifier)"])
        }
        if isNew {
            pending.withLock { $0.count += 1 }
            woken.withLock { $0 = true }
            logger.info("merchant-token notification recorded", metadata: ["merchant": "\(merchantID)", "event": "\(eventID)"])
        }
        return isNew
    }

    /// Whether a notification arrived since the last call (the background service's wake-up).
    func takeWakeUp() -> Bool {
        woken.withLock { value in
            defer { value = false }
            return value
        }
    }

    /// Apple's identifiers are opaque: letters, digits, `.`, `_` and `-`, bounded.
    static func isIdentifier(_ text: String, maximumLength: Int) -> Bool {
        (1...maximumLength).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                $0.isASCIILetterOrDigit || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
            }
    }

    /// Merchants with an identity key in the HSM, re-read at most every few seconds so a flood of
    /// made-up merchant ids costs a set look-up, not an HSM listing each.
    private func isKnownMerchant(_ merchantID: String) async -> Bool {
        let now = ContinuousClock.now
        let (known, stale) = knownMerchants.withLock { state in
            (state.ids.contains(merchantID), state.readAt.map { now - $0 > .seconds(5) } ?? true)
        }
        if known || !stale { return known }
        // An HSM that cannot list its keys right now must not cost Apple's notification: it is
        // recorded (the source allow-list and the pending limit still bound it) and the fetch retries.
        guard let listed = try? await keys.list() else { return true }
        let ids = Set(listed.filter { $0.purpose == .identity && $0.state != .retired }.compactMap(\.merchantID))
        knownMerchants.withLock { $0 = KnownMerchants(ids: ids, readAt: now) }
        return ids.contains(merchantID)
    }

    private struct KnownMerchants {
        var ids: Set<String> = []
        var readAt: ContinuousClock.Instant?
    }

    /// Events waiting for a fetch, read from the database at most once a second.
    private func pendingCount() async throws(MerchantTokenFailure) -> Int {
        let now = ContinuousClock.now
        if let cached = pending.withLock({ state in state.readAt.flatMap { now - $0 < .seconds(1) ? state.count : nil } }) {
            return cached
        }
        do {
            let count = try await events.eventCount(state: .pending)
            pending.withLock { $0 = (count, now) }
            return count
        } catch {
            throw MerchantTokenFailure(.databaseUnavailable, "the notification could not be recorded")
        }
    }

    // MARK: Processing the outbox

    /// Deletes applied and failed events older than the retention, in bounded batches; returns how many.
    func purgeSettledEvents() async -> Int {
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
    func processDueEvents(limit: Int = 20) async -> Int {
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
    func process(_ record: MerchantTokenEventRecord) async throws(MerchantTokenFailure) -> MerchantTokenEventRecord? {
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
            outcome.state = .applied
            outcome.effect = effect.summary
            outcome.lastError = nil
        } catch let error as AppleGatewayError {
            failed(&outcome, reason: "\(error.code.rawValue): \(error.message)", retryable: Self.isWorthRetrying(error))
        } catch let error as VaultError {
            failed(&outcome, reason: "\(error.code.rawValue): \(error.message)", retryable: error.category == .unavailable)
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
        metrics?.merchantTokenEvent(outcome.state == .applied ? "applied" : outcome.state == .failed ? "failed" : "retry")
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

    static let inProgress = "attempt in progress"

    /// Apple's 404 may come before its event is ready, and 401/403 while a new identity
    /// certificate propagates at Apple: worth trying again within the seven days, unlike a 400.
    static func isWorthRetrying(_ error: AppleGatewayError) -> Bool {
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
        writeAudit(
            user: user, action: "merchant-tokens.retry", merchantID: record.merchantIdentifier, result: outcome.state.rawValue,
            detail: "event \(eventID)")
        return outcome
    }

    // MARK: Calls to Apple for merchants and admins

    /// Unlinks a merchant token at Apple, then makes the caller's organisation's high-value tokens
    /// for it unusable here at once (another organisation with a paypage for the same merchant id
    /// keeps its own until Apple's UNLINK event arrives, which unlinks every organisation's).
    public func unlink(merchantID: String, merchantTokenID: String, user: String, organization: String?) async throws(MerchantTokenFailure)
        -> MerchantTokenEffect
    {
        try Self.checkIdentifiers(merchantID: merchantID, merchantTokenID: merchantTokenID)
        return try await audited("merchant-tokens.unlink", user: user, merchantID: merchantID, merchantTokenID: merchantTokenID) {
            () async throws(MerchantTokenFailure) in
            try await authorize(merchantID: merchantID, merchantTokenID: merchantTokenID, organization: organization)
            // Here first: the safe direction. Should Apple then fail, the tokens are already
            // unusable and the caller's retry (idempotent here) only has Apple left to do.
            let effect: MerchantTokenEffect
            do throws(VaultError) {
                effect = try await vault.unlinkMerchantToken(merchantTokenID, organization: organization)
            } catch {
                throw MerchantTokenFailure(error)
            }
            do throws(AppleGatewayError) {
                try await gateway.unlink(merchantID: merchantID, merchantTokenID: merchantTokenID)
            } catch {
                throw MerchantTokenFailure(error)
            }
            return effect
        }
    }

    /// Sets the URL Apple notifies for a merchant token (`updateMerchantMetadata`).
    public func updateNotificationURL(
        merchantID: String, merchantTokenID: String, url: String, user: String, organization: String?
    ) async throws(MerchantTokenFailure) {
        try Self.checkIdentifiers(merchantID: merchantID, merchantTokenID: merchantTokenID)
        _ = try await audited("merchant-tokens.update-url", user: user, merchantID: merchantID, merchantTokenID: merchantTokenID) {
            () async throws(MerchantTokenFailure) in
            try await authorize(merchantID: merchantID, merchantTokenID: merchantTokenID, organization: organization)
            do throws(AppleGatewayError) {
                try await gateway.updateNotificationURL(merchantID: merchantID, merchantTokenID: merchantTokenID, url: url)
            } catch {
                throw MerchantTokenFailure(error)
            }
            return MerchantTokenEffect(summary: "notification URL updated", tokens: 0)
        }
    }

    /// Apple Pay on the web: a payment session for the merchant, Apple's object returned as sent.
    func paymentSession(_ request: PaymentSessionRequest, organization: String) async throws(MerchantTokenFailure) -> [UInt8] {
        try await authorize(merchantID: request.merchantIdentifier, organization: organization)
        do {
            let session = try await gateway.paymentSession(request)
            metrics?.merchantTokenEvent("payment_session")
            return session
        } catch {
            metrics?.merchantTokenEvent("payment_session_\(error.code.rawValue)")
            throw MerchantTokenFailure(error)
        }
    }

    /// Bounded, printable identifiers before anything is looked up or audited: a request body is
    /// anyone's text, and an audit line must not become a place to write a card number.
    static func checkIdentifiers(merchantID: String, merchantTokenID: String) throws(MerchantTokenFailure) {
        guard isIdentifier(merchantID, maximumLength: 128), isIdentifier(merchantTokenID, maximumLength: 64) else {
            throw MerchantTokenFailure(
                .invalidRequest,
                "merchantId (letters, digits, . _ -, at most 128) or merchantTokenId (at most 64 of the same) is malformed")
        }
    }

    /// An organisation acts only for the merchants of its paypages, and only on merchant tokens
    /// it holds a high-value token for. Admins (no organisation) act for any.
    private func authorize(merchantID: String, merchantTokenID: String? = nil, organization: String?) async throws(MerchantTokenFailure) {
        guard let organization else { return }
        do {
            let policy = try await vault.organizationPolicy(organization)
            guard policy.merchantIdentifiers.contains(merchantID) else {
                throw MerchantTokenFailure(
                    .merchantNotAuthorized, "organisation \(organization) has no paypage for merchant \(merchantID)")
            }
            if let merchantTokenID {
                guard try await vault.organizations(holdingMerchantToken: merchantTokenID).contains(organization) else {
                    throw MerchantTokenFailure(
                        .tokenNotFound, "organisation \(organization) holds no such merchant token")
                }
            }
        } catch let error as MerchantTokenFailure {
            throw error
        } catch let error as VaultError {
            throw MerchantTokenFailure(error)
        } catch {
            throw MerchantTokenFailure(.internalError, "\(error)")
        }
    }

    private func audited<Value>(
        _ action: String, user: String, merchantID: String, merchantTokenID: String,
        _ body: () async throws(MerchantTokenFailure) -> Value
    ) async throws(MerchantTokenFailure) -> Value {
        do {
            let value = try await body()
            writeAudit(user: user, action: action, merchantID: merchantID, result: "ok", detail: "merchant token \(merchantTokenID)")
            return value
        } catch {
            writeAudit(user: user, action: action, merchantID: merchantID, result: "refused", detail: "\(merchantTokenID): \(error.code)")
            throw error
        }
    }

    private func writeAudit(user: String, action: String, merchantID: String, result: String, detail: String) {
        guard let audit else { return }
        do {
            try audit.append(
                AuditLog.Record(
                    time: vault.now, user: user, action: action, keyID: nil, merchantID: merchantID, result: result, detail: detail))
        } catch {
            logger.error("the audit log could not be written", metadata: ["action": "\(action)", "error": "\(error)"])
        }
    }
}

/// How the outbox retries: Apple keeps an event's details for seven days; attempts back off from
/// `retryBase` doubling to an hour; a claimed event is someone else's for `lease`.
public struct MerchantTokenEventPolicy: Sendable {
    public var pendingLimit: Int
    public var retryBase: TimeInterval
    public var maximumBackoff: TimeInterval = 3600
    public var lease: TimeInterval = 120
    public var appleRetention: TimeInterval = 7 * 86_400
    /// How long applied and failed events stay listed: past a year of assessments (PCI DSS keeps
    /// audit trails twelve months); they hold no card data either way.
    public var eventRetention: TimeInterval = 400 * 86_400

    public init(pendingLimit: Int = 10_000, retryBase: TimeInterval = 30) {
        self.pendingLimit = pendingLimit
        self.retryBase = retryBase
    }

    func backoff(afterAttempt attempt: Int) -> TimeInterval {
        min(retryBase * pow(2, Double(max(attempt - 1, 0))), maximumBackoff)
    }
}

extension UInt8 {
    fileprivate var isASCIILetterOrDigit: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
