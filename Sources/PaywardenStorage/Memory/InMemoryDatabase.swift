import Foundation
import PaywardenPrimitives
import Synchronization

/// Every store in this process's memory, with the drivers' semantics (the conformance suite runs
/// against it too): for unit tests, `token decrypt`, and the load test's baseline. Nothing in it
/// survives the process, so `serve` uses it only when told to in so many words (`memory:`).
public final class InMemoryDatabase: PaywardenDatabase {
    private struct State {
        var replay: [[UInt8]: Date] = [:]
        var registrations: [[UInt8]: RegistrationRecord] = [:]
        var tokens: [TokenKey: TokenRecord] = [:]
        var paypages: [String: PaypageRecord] = [:]
        var events: [String: MerchantTokenEventRecord] = [:]
        var keyRecords: [String: StoredKeyRecord] = [:]
        var upstreamClientKeys: [String: UpstreamClientKeyRecord] = [:]
        var usageInformation: [String: UsageInformationRecord] = [:]
        var senderKeys: [String: UsageInformationSenderKeyRecord] = [:]
        var applied: [String] = []
        var webMerchants: [String: WebMerchantRecord] = [:]
        /// The change holding each web merchant, and until when.
        var webMerchantChanges: [String: (id: String, until: Date)] = [:]
        var webMerchantDomains: [String: WebMerchantDomainRecord] = [:]
        var domainChallenges: [OrganizationID: String] = [:]
        var domainAssociation: DomainAssociationRecord?
    }

    private struct TokenKey: Hashable {
        var organization: OrganizationID
        var token: String
    }

    private let state = Mutex(State())

    public init(migrated: Bool = true) {
        if migrated { state.withLock { $0.applied = Schema.migrations } }
    }

    public var driver: String { "memory" }
    public var location: String { "this process's memory (lost when it stops)" }

    public func checkConnection() async throws(StorageError) {}

    public func rowCounts() async throws(StorageError) -> [(table: String, rows: Int)] {
        state.withLock { state in
            [
                ("replay_ledger", state.replay.count), ("paypages", state.paypages.count), ("registrations", state.registrations.count),
                ("high_value_tokens", state.tokens.count), ("merchant_token_events", state.events.count),
                ("merchant_keys", state.keyRecords.count), ("web_merchants", state.webMerchants.count),
                ("domain_associations", state.domainAssociation == nil ? 0 : 1), ("usage_information", state.usageInformation.count),
                ("usage_information_sender_keys", state.senderKeys.count), ("web_merchant_domains", state.webMerchantDomains.count),
                ("web_merchant_domain_challenges", state.domainChallenges.count),
                ("upstream_client_keys", state.upstreamClientKeys.count),
            ]
        }
    }

    public func keyUsage() async throws(StorageError) -> [KeyUsage] {
        state.withLock { state in
            // Tombstones have no payload, so no key: they protect nothing.
            let counts: [(KeyUsage.Use, [String])] = [
                (.registrationPayloads, state.registrations.values.compactMap { $0.sealed?.keyID }),
                (.tokenPayloads, state.tokens.values.map(\.sealed.keyID)),
                (.tokenFingerprints, state.tokens.values.map(\.fingerprintKeyID)),
            ]
            return counts.flatMap { use, keyIDs in
                Dictionary(grouping: keyIDs) { $0 }.map { KeyUsage(use: use, keyID: $0.key, rows: $0.value.count) }
                    .sorted { $0.keyID < $1.keyID }
            }
        }
    }

    // MARK: Migrations

    public func schemaStatus() async throws(StorageError) -> SchemaStatus {
        state.withLock { SchemaStatus(applied: $0.applied, unknown: []) }
    }

    public func migrate() async throws(StorageError) -> [String] {
        state.withLock { state in
            let pending = Schema.migrations.filter { !state.applied.contains($0) }
            state.applied = Schema.migrations
            return pending
        }
    }

    // MARK: UsageInformationStore

    public func usageInformationSenderKey(merchantID: String) async throws(StorageError) -> UsageInformationSenderKeyRecord? {
        state.withLock { $0.senderKeys[merchantID] }
    }

    public func createUsageInformationSenderKey(_ record: UsageInformationSenderKeyRecord) async throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            guard state.senderKeys[record.merchantID] == nil else {
                throw StorageError(.conflict, "the merchant has a sender key", table: "usage_information_sender_keys")
            }
            state.senderKeys[record.merchantID] = record
        }
    }

    public func usageInformation(merchantTokenID: String) async throws(StorageError) -> UsageInformationRecord? {
        state.withLock { $0.usageInformation[merchantTokenID] }
    }

    public func saveUsageInformation(
        _ record: UsageInformationRecord, replacing expected: UsageInformationRecord?
    ) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard state.usageInformation[record.merchantTokenID]?.revision == expected?.revision else { return false }
            state.usageInformation[record.merchantTokenID] = record
            return true
        }
    }

    public func deleteUsageInformation(replacing expected: UsageInformationRecord) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard state.usageInformation[expected.merchantTokenID]?.revision == expected.revision else { return false }
            state.usageInformation[expected.merchantTokenID] = nil
            return true
        }
    }

    public func deleteUsageInformation(merchantTokenID: String) async throws(StorageError) -> Bool {
        state.withLock { $0.usageInformation.removeValue(forKey: merchantTokenID) != nil }
    }

    // MARK: ReplayLedger

    public func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws(StorageError) -> LedgerClaim {
        LedgerClaim(claimed: state.withLock { Self.claim(transactionID, until: expiry, now: now, in: &$0) }, ticket: .durable)
    }

    /// In memory, a write is as durable as it gets when it is made.
    public func awaitDurable(_ ticket: CommitTicket) async throws(StorageError) {}

    public func isClaimed(_ transactionID: [UInt8], now: Date) async throws(StorageError) -> Bool {
        state.withLock { state in state.replay[transactionID].map { $0 > now } ?? false }
    }

    private static func claim(_ transactionID: [UInt8], until expiry: Date, now: Date, in state: inout State) -> Bool {
        if let recorded = state.replay[transactionID], recorded > now { return false }
        state.replay[transactionID] = expiry
        return true
    }

    public func releaseTransaction(_ transactionID: [UInt8]) async throws(StorageError) {
        _ = state.withLock { $0.replay.removeValue(forKey: transactionID) }
    }

    public func purgeExpiredTransactions(now: Date, limit: Int) async throws(StorageError) -> Int {
        state.withLock { state in
            let expired = state.replay.filter { $0.value <= now }.keys.prefix(limit)
            for id in expired { state.replay.removeValue(forKey: id) }
            return expired.count
        }
    }

    // MARK: RegistrationStore

    public func insertRegistration(_ record: RegistrationRecord) async throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            guard state.registrations[record.lookupKey] == nil else {
                throw StorageError(.conflict, "the registration exists", table: "registrations")
            }
            state.registrations[record.lookupKey] = record
        }
    }

    public func insertRegistration(_ record: RegistrationRecord, claiming claim: ReplayClaimRequest) async throws(StorageError) -> Bool {
        try state.withLock { state throws(StorageError) in
            guard state.registrations[record.lookupKey] == nil else {
                throw StorageError(.conflict, "the registration exists", table: "registrations")
            }
            guard Self.claim(claim.transactionID, until: claim.expiry, now: claim.now, in: &state) else { return false }
            state.registrations[record.lookupKey] = record
            return true
        }
    }

    public func replaceRegistration(_ record: RegistrationRecord) async throws(StorageError) {
        state.withLock { $0.registrations[record.lookupKey] = record }
    }

    public func registration(lookupKey: [UInt8]) async throws(StorageError) -> RegistrationRecord? {
        state.withLock { $0.registrations[lookupKey] }
    }

    public func recordRedemption(lookupKey: [UInt8], now: Date) async throws(StorageError) -> RegistrationRecord? {
        state.withLock { state in
            guard var record = state.registrations[lookupKey] else { return nil }
            guard record.isLive(at: now) else { return record }
            record.redemptions += 1
            state.registrations[lookupKey] = record
            return record
        }
    }

    public func recordRedemption(
        lookupKey: [UInt8], now: Date, issuing token: TokenRecord
    ) async throws(StorageError) -> RedemptionWrite {
        try state.withLock { state throws(StorageError) in
            guard var record = state.registrations[lookupKey] else { return RedemptionWrite(registration: nil, token: nil) }
            guard record.isLive(at: now) else { return RedemptionWrite(registration: record, token: nil) }
            let insertion = try Self.insertToken(token, in: &state)
            record.redemptions += 1
            state.registrations[lookupKey] = record
            return RedemptionWrite(registration: record, token: insertion)
        }
    }

    public func takeRegistration(lookupKey: [UInt8], ciphertext: [UInt8], now: Date) async throws(StorageError) -> RegistrationRecord? {
        state.withLock { state in
            guard var record = state.registrations[lookupKey], record.isLive(at: now), record.sealed?.ciphertext == ciphertext else {
                return nil
            }
            record.redemptions += 1
            record.sealed = nil
            record.endedAt = now
            state.registrations[lookupKey] = record
            return record
        }
    }

    public func endRegistration(lookupKey: [UInt8], ciphertext: [UInt8], at now: Date) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard var record = state.registrations[lookupKey], record.sealed?.ciphertext == ciphertext else { return false }
            record.sealed = nil
            record.endedAt = now
            state.registrations[lookupKey] = record
            return true
        }
    }

    public func purgeRegistrations(now: Date, tombstonesEndedBefore: Date) async throws(StorageError) -> RegistrationPurge {
        state.withLock { state in
            var purge = RegistrationPurge(payloadsDestroyed: 0, tombstonesDeleted: 0)
            for (key, var record) in state.registrations {
                if record.sealed != nil, record.expiresAt <= now {
                    record.sealed = nil
                    record.endedAt = now
                    state.registrations[key] = record
                    purge.payloadsDestroyed += 1
                } else if record.sealed == nil, let ended = record.endedAt, ended < tombstonesEndedBefore {
                    state.registrations.removeValue(forKey: key)
                    purge.tombstonesDeleted += 1
                }
            }
            return purge
        }
    }

    public func registrations(sealedWith keyID: String, limit: Int) async throws(StorageError) -> [RegistrationRecord] {
        state.withLock { state in
            // By lookup key, bytewise, as the SQL drivers order their primary key.
            Array(
                state.registrations.values.filter { $0.sealed?.keyID == keyID }
                    .sorted { $0.lookupKey.lexicographicallyPrecedes($1.lookupKey) }
                    .prefix(limit))
        }
    }

    public func resealRegistration(
        lookupKey: [UInt8], previousKeyID: String, sealed: SealedPayload
    ) async throws(StorageError) -> Bool {
        state.withLock { state in
            // A tombstone's nil payload never matches: ending wins over a re-wrap in flight.
            guard state.registrations[lookupKey]?.sealed?.keyID == previousKeyID else { return false }
            state.registrations[lookupKey]?.sealed = sealed
            return true
        }
    }

    public func registrationCount(lookupKeyID keyID: String) async throws(StorageError) -> Int {
        state.withLock { state in state.registrations.values.count { $0.lookupKeyID == keyID || $0.lookupKeyID == nil } }
    }

    // MARK: TokenStore

    public func insertToken(_ record: TokenRecord) async throws(StorageError) -> TokenInsertion {
        try state.withLock { state throws(StorageError) in try Self.insertToken(record, in: &state) }
    }

    private static func insertToken(_ record: TokenRecord, in state: inout State) throws(StorageError) -> TokenInsertion {
        if let existing = state.tokens.values.first(where: {
            $0.organization == record.organization && $0.fingerprint == record.fingerprint
        }) {
            return .existing(existing)
        }
        let key = TokenKey(organization: record.organization, token: record.token)
        guard state.tokens[key] == nil else {
            throw StorageError(.conflict, "the token value is taken in the organisation", table: "high_value_tokens")
        }
        state.tokens[key] = record
        return .inserted(record)
    }

    public func token(_ token: String, organization: OrganizationID) async throws(StorageError) -> TokenRecord? {
        state.withLock { $0.tokens[TokenKey(organization: organization, token: token)] }
    }

    public func token(fingerprint: [UInt8], organization: OrganizationID) async throws(StorageError) -> TokenRecord? {
        state.withLock { state in
            state.tokens.values.first { $0.organization == organization && $0.fingerprint == fingerprint }
        }
    }

    public func tokens(merchantTokenID: String) async throws(StorageError) -> [TokenRecord] {
        state.withLock { state in
            state.tokens.values.filter { $0.merchantTokenID == merchantTokenID }.sorted { $0.organization < $1.organization }
        }
    }

    public func updateToken(
        _ token: String, organization: OrganizationID, state newState: TokenRecord.State, sealed: SealedPayload?, at now: Date
    ) async throws(StorageError) -> TokenRecord? {
        state.withLock { state in
            let key = TokenKey(organization: organization, token: token)
            guard var record = state.tokens[key] else { return nil }
            record.state = newState
            if let sealed { record.sealed = sealed }
            record.updatedAt = now
            state.tokens[key] = record
            return record
        }
    }

    public func replaceTokenPayload(
        _ token: String, organization: OrganizationID, replacing previous: SealedPayload, with sealed: SealedPayload, at now: Date
    ) async throws(StorageError) -> Bool {
        state.withLock { state in
            let key = TokenKey(organization: organization, token: token)
            guard var record = state.tokens[key], record.state == .active, record.sealed.ciphertext == previous.ciphertext else {
                return false
            }
            record.sealed = sealed
            record.updatedAt = now
            state.tokens[key] = record
            return true
        }
    }

    public func deleteToken(_ token: String, organization: OrganizationID) async throws(StorageError) -> Bool {
        state.withLock { $0.tokens.removeValue(forKey: TokenKey(organization: organization, token: token)) != nil }
    }

    public func unlinkTokens(merchantTokenID: String, organization: OrganizationID?, at now: Date) async throws(StorageError) -> Int {
        state.withLock { state in
            var changed = 0
            for (key, var record) in state.tokens
            where record.merchantTokenID == merchantTokenID && record.state == .active
                && (organization == nil || record.organization == organization)
            {
                record.state = .unlinked
                record.updatedAt = now
                state.tokens[key] = record
                changed += 1
            }
            return changed
        }
    }

    public func replaceMerchantTokenMetadata(
        _ token: String, organization: OrganizationID, replacing expected: [UInt8]?, with metadata: [UInt8], at now: Date
    ) async throws(StorageError) -> Bool {
        state.withLock { state in
            let key = TokenKey(organization: organization, token: token)
            guard var record = state.tokens[key], record.state != .deleted, record.merchantTokenMetadata == expected else { return false }
            record.merchantTokenMetadata = metadata
            if record.state == .active { record.updatedAt = now }
            state.tokens[key] = record
            return true
        }
    }

    public func deleteUnlinkedTokens(before: Date, limit: Int) async throws(StorageError) -> Int {
        state.withLock { state in
            let expired = state.tokens.filter { $0.value.state == .unlinked && $0.value.updatedAt < before }
                .sorted {
                    ($0.value.updatedAt, $0.key.organization, $0.key.token) < ($1.value.updatedAt, $1.key.organization, $1.key.token)
                }
                .prefix(max(limit, 0))
            for (key, _) in expired { state.tokens.removeValue(forKey: key) }
            return expired.count
        }
    }

    public func tokens(sealedWith keyID: String, limit: Int) async throws(StorageError) -> [TokenRecord] {
        Array(sortedTokens { $0.sealed.keyID == keyID }.prefix(limit))
    }

    public func resealToken(
        _ token: String, organization: OrganizationID, previousKeyID: String, sealed: SealedPayload
    ) async throws(StorageError) -> Bool {
        state.withLock { state in
            let key = TokenKey(organization: organization, token: token)
            guard state.tokens[key]?.sealed.keyID == previousKeyID else { return false }
            state.tokens[key]?.sealed = sealed
            return true
        }
    }

    public func tokens(fingerprintedWith keyID: String, limit: Int) async throws(StorageError) -> [TokenRecord] {
        Array(sortedTokens { $0.fingerprintKeyID == keyID }.prefix(limit))
    }

    public func refingerprintToken(
        _ token: String, organization: OrganizationID, previousKeyID: String, fingerprint: [UInt8], fingerprintKeyID: String
    ) async throws(StorageError) -> Bool {
        try state.withLock { state throws(StorageError) in
            let key = TokenKey(organization: organization, token: token)
            guard var record = state.tokens[key], record.fingerprintKeyID == previousKeyID else { return false }
            // The (organization, fingerprint) uniqueness the SQL drivers' constraint enforces.
            let taken = state.tokens.values.contains { other in
                other.token != token && other.organization == organization && other.fingerprint == fingerprint
            }
            if taken {
                throw StorageError(.conflict, "the organisation has a token for the fingerprint", table: "high_value_tokens")
            }
            record.fingerprint = fingerprint
            record.fingerprintKeyID = fingerprintKeyID
            state.tokens[key] = record
            return true
        }
    }

    /// The tokens `matching`, by organisation then token: the SQL drivers' primary-key order.
    private func sortedTokens(where matching: (TokenRecord) -> Bool) -> [TokenRecord] {
        state.withLock { state in
            state.tokens.values.filter(matching).sorted { ($0.organization, $0.token) < ($1.organization, $1.token) }
        }
    }

    // MARK: PaypageStore

    public func createPaypage(_ record: PaypageRecord) async throws(StorageError) {
        try state.withLock { state throws(StorageError) in
            guard state.paypages[record.id] == nil else {
                throw StorageError(.conflict, "the paypage exists", table: "paypages", row: record.id)
            }
            state.paypages[record.id] = record
        }
    }

    public func paypage(id: String) async throws(StorageError) -> PaypageRecord? {
        state.withLock { $0.paypages[id] }
    }

    public func paypages() async throws(StorageError) -> [PaypageRecord] {
        state.withLock { $0.paypages.values.sorted { $0.id < $1.id } }
    }

    public func setPaypage(id: String, enabled: Bool) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard state.paypages[id] != nil else { return false }
            state.paypages[id]?.enabled = enabled
            return true
        }
    }

    // MARK: EventStore

    public func recordEvent(_ record: MerchantTokenEventRecord) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard state.events[record.id] == nil else { return false }
            state.events[record.id] = record
            return true
        }
    }

    public func event(id: String) async throws(StorageError) -> MerchantTokenEventRecord? {
        state.withLock { $0.events[id] }
    }

    public func dueEvents(at now: Date, limit: Int) async throws(StorageError) -> [MerchantTokenEventRecord] {
        state.withLock { state in
            Array(
                state.events.values.filter { $0.state == .pending && $0.nextAttemptAt <= now }
                    .sorted { ($0.nextAttemptAt, $0.id) < ($1.nextAttemptAt, $1.id) }
                    .prefix(limit))
        }
    }

    public func events(state wanted: MerchantTokenEventRecord.State?, limit: Int) async throws(StorageError) -> [MerchantTokenEventRecord] {
        state.withLock { state in
            Array(
                state.events.values.filter { wanted == nil || $0.state == wanted }
                    .sorted { ($0.receivedAt, $0.id) > ($1.receivedAt, $1.id) }
                    .prefix(limit))
        }
    }

    public func eventCount(state wanted: MerchantTokenEventRecord.State) async throws(StorageError) -> Int {
        state.withLock { state in state.events.values.count { $0.state == wanted } }
    }

    public func deleteSettledEvents(before: Date, limit: Int) async throws(StorageError) -> Int {
        state.withLock { state in
            let settled = state.events.values.filter { $0.state != .pending && $0.updatedAt < before }
                .sorted { ($0.updatedAt, $0.id) < ($1.updatedAt, $1.id) }.prefix(max(limit, 0))
            for record in settled { state.events[record.id] = nil }
            return settled.count
        }
    }

    public func updateEvent(_ record: MerchantTokenEventRecord, expectedAttempts: Int) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard var stored = state.events[record.id], stored.attempts == expectedAttempts else { return false }
            stored.state = record.state
            stored.eventType = record.eventType
            stored.merchantTokenID = record.merchantTokenID
            stored.attempts = record.attempts
            stored.nextAttemptAt = record.nextAttemptAt
            stored.lastError = record.lastError
            stored.effect = record.effect
            stored.updatedAt = record.updatedAt
            stored.detail = record.detail
            state.events[record.id] = stored
            return true
        }
    }

    // MARK: KeyRecordStore

    public func keyRecords() async throws(StorageError) -> [StoredKeyRecord] {
        state.withLock { $0.keyRecords.values.sorted { $0.keyID < $1.keyID } }
    }

    public func insertKeyRecord(_ record: StoredKeyRecord) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard state.keyRecords[record.keyID] == nil else { return false }
            state.keyRecords[record.keyID] = record
            return true
        }
    }

    public func updateKeyRecord(_ record: StoredKeyRecord, expectedRevision: Int) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard state.keyRecords[record.keyID]?.revision == expectedRevision else { return false }
            state.keyRecords[record.keyID] = record
            return true
        }
    }

    public func deleteKeyRecord(keyID: String, expectedRevision: Int) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard state.keyRecords[keyID]?.revision == expectedRevision else { return false }
            state.keyRecords[keyID] = nil
            return true
        }
    }

    public func upstreamClientKeys() async throws(StorageError) -> [UpstreamClientKeyRecord] {
        state.withLock { $0.upstreamClientKeys.values.sorted { $0.upstream < $1.upstream } }
    }

    public func recordUpstreamClientKey(_ record: UpstreamClientKeyRecord) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard state.upstreamClientKeys[record.upstream]?.keyID != record.keyID else { return false }
            state.upstreamClientKeys[record.upstream] = record
            return true
        }
    }

    // MARK: WebMerchantStore

    public func webMerchant(id: String) async throws(StorageError) -> WebMerchantRecord? {
        state.withLock { $0.webMerchants[id] }
    }

    public func webMerchants() async throws(StorageError) -> [WebMerchantRecord] {
        state.withLock { $0.webMerchants.values.sorted { $0.id < $1.id } }
    }

    public func beginWebMerchantChange(_ change: WebMerchantChange) async throws(StorageError) -> WebMerchantChangeStart {
        state.withLock { state in
            guard var existing = state.webMerchants[change.merchantID] else {
                guard var reservation = change.reservation else { return .absent }
                reservation.state = .reserved
                reservation.domainNames = []
                reservation.domainAssociationSHA256 = nil
                reservation.createdAt = change.now
                reservation.updatedAt = change.now
                state.webMerchants[reservation.id] = reservation
                state.webMerchantChanges[reservation.id] = (change.changeID, change.until)
                return .started(reservation)
            }
            let free = state.webMerchantChanges[existing.id].map { $0.until <= change.now } ?? true
            let owned: Bool
            if let reservation = change.reservation {
                // A lapsed reservation is anyone's: its change died before Apple was asked.
                owned = existing.organization == reservation.organization || existing.state == .reserved
                if free && owned { existing.organization = reservation.organization }
            } else {
                owned = change.organization == nil || existing.organization == change.organization
            }
            guard free, owned else { return .refused(existing) }
            state.webMerchants[existing.id] = existing
            state.webMerchantChanges[existing.id] = (change.changeID, change.until)
            return .started(existing)
        }
    }

    public func finishWebMerchantChange(_ record: WebMerchantRecord, changeID: String) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard state.webMerchantChanges[record.id]?.id == changeID, let existing = state.webMerchants[record.id],
                existing.organization == record.organization
            else { return false }
            state.webMerchants[record.id] = record
            state.webMerchantChanges[record.id] = nil
            return true
        }
    }

    public func abandonWebMerchantChange(id: String, changeID: String) async throws(StorageError) {
        state.withLock { state in
            guard state.webMerchantChanges[id]?.id == changeID else { return }
            state.webMerchantChanges[id] = nil
            if state.webMerchants[id]?.state == .reserved { state.webMerchants[id] = nil }
        }
    }

    public func webMerchantDomains(_ domains: [String]) async throws(StorageError) -> [WebMerchantDomainRecord] {
        state.withLock { state in Set(domains).compactMap { state.webMerchantDomains[$0] } }
    }

    public func allWebMerchantDomains() async throws(StorageError) -> [WebMerchantDomainRecord] {
        state.withLock { $0.webMerchantDomains.values.sorted { $0.domain < $1.domain } }
    }

    public func claimWebMerchantDomain(_ record: WebMerchantDomainRecord) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard state.webMerchantDomains[record.domain] == nil else { return false }
            state.webMerchantDomains[record.domain] = record
            return true
        }
    }

    public func bindWebMerchantDomain(_ domain: String, organization: OrganizationID, merchantID: String) async throws(StorageError) -> Bool
    {
        state.withLock { state in
            guard var record = state.webMerchantDomains[domain], record.organization == organization,
                record.merchantID == nil || record.merchantID == merchantID
            else { return false }
            record.merchantID = merchantID
            state.webMerchantDomains[domain] = record
            return true
        }
    }

    public func unbindWebMerchantDomain(_ domain: String, merchantID: String) async throws(StorageError) -> Bool {
        state.withLock { state in
            guard var record = state.webMerchantDomains[domain], record.merchantID == merchantID else { return false }
            record.merchantID = nil
            state.webMerchantDomains[domain] = record
            return true
        }
    }

    public func assignWebMerchantDomain(_ record: WebMerchantDomainRecord) async throws(StorageError) -> Bool {
        state.withLock { state in
            if let existing = state.webMerchantDomains[record.domain] {
                guard existing.merchantID == nil else { return false }
                state.webMerchantDomains[record.domain] = WebMerchantDomainRecord(
                    domain: record.domain, organization: record.organization, merchantID: nil, proof: record.proof,
                    provedAt: record.provedAt)
            } else {
                state.webMerchantDomains[record.domain] = record
            }
            return true
        }
    }

    public func webMerchantDomainChallenge(organization: OrganizationID, proposed: String, at now: Date) async throws(StorageError)
        -> String
    {
        state.withLock { state in
            if let existing = state.domainChallenges[organization] { return existing }
            state.domainChallenges[organization] = proposed
            return proposed
        }
    }

    public func saveDomainAssociation(_ record: DomainAssociationRecord) async throws(StorageError) {
        state.withLock { $0.domainAssociation = record }
    }

    public func domainAssociation() async throws(StorageError) -> DomainAssociationRecord? {
        state.withLock { $0.domainAssociation }
    }
}
