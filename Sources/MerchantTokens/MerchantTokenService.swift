import Foundation
import KeyCustody
import Logging
import OutboundTLS
import PaywardenServices
import PaywardenStorage
import Synchronization
import Vault

/// Merchant tokens end to end: Apple's notifications recorded (an outbox in the database), each
/// event's details fetched from Apple over mutual TLS and applied to the vault, and the calls
/// merchants and admins make to Apple (unlink, notification URL, payment sessions). The HTTP
/// controllers, the background service and the CLI all go through it.
public final class MerchantTokenService: Sendable {
    let gateway: any MerchantTokenGateway
    let vault: CardVault
    /// The outbox of Apple's events: recorded, claimed, settled and purged here.
    public let events: any EventStore
    let keys: MerchantKeyStore
    public let metrics: ServerMetrics?
    let audit: AuditLog?
    let policy: MerchantTokenEventPolicy
    let logger: Logger
    /// Merchant-token usage information; nil when it is off (no public URL).
    let usageInformation: UsageInformationConfiguration?
    private let knownMerchants = Mutex<KnownMerchants>(KnownMerchants())
    /// Events waiting for a fetch, as last read (at most once a second); the outbox forgets the
    /// reading after each attempt.
    let pending = Mutex<(count: Int, readAt: ContinuousClock.Instant?)>((0, nil))
    /// A notification arrived since the background service last looked.
    let woken = Mutex(false)

    public init(
        gateway: any MerchantTokenGateway, vault: CardVault, events: any EventStore, keys: MerchantKeyStore,
        policy: MerchantTokenEventPolicy,
        metrics: ServerMetrics?, audit: AuditLog?, logger: Logger, usageInformation: UsageInformationConfiguration? = nil
    ) {
        self.usageInformation = usageInformation
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
    public func receiveNotification(merchantID: String, eventID: String) async throws(MerchantTokenFailure) -> Bool {
        guard Self.isIdentifier(merchantID, maximumLength: 128), Self.isIdentifier(eventID, maximumLength: 128) else {
            throw MerchantTokenFailure(.invalidRequest, "the merchant id or event id is malformed")
        }
        guard await isKnownMerchant(merchantID) else {
            throw MerchantTokenFailure(.unknownMerchant, "no merchant identity key for this merchant id")
        }
        guard try await pendingCount() < policy.pendingLimit else {
            // Apple repeating a notification already recorded is still answered 200.
            if (try? await events.event(id: eventID))?.map({ $0.merchantIdentifier == merchantID }) == true { return false }
            metrics?.merchantTokenEvent(.refusedOverLimit)
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
        metrics?.merchantTokenEvent(isNew ? .received : .repeated)
        if !isNew, let stored = try? await events.event(id: eventID), stored.merchantIdentifier != merchantID {
            // Apple's event ids are unique; one arriving for a second merchant is worth a look, not a second fetch.
            metrics?.merchantTokenEvent(.idForAnotherMerchant)
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
    public func takeWakeUp() -> Bool {
        woken.withLock { value in
            defer { value = false }
            return value
        }
    }

    /// Apple's identifiers are opaque: letters, digits, `.`, `_` and `-`, bounded.
    public static func isIdentifier(_ text: String, maximumLength: Int) -> Bool {
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
}

extension UInt8 {
    fileprivate var isASCIILetterOrDigit: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
