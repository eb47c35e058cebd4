import ApplePay
import Foundation
import PaywardenPrimitives
import PaywardenStorage

/// What Apple's merchant-token events do to the vault (docs/apple-pay.md, "What an event does"): an unlinked
/// merchant token's tokens stop working and are destroyed after a retention period; updated
/// metadata is kept beside them. The event queue itself (fetching, retrying) is the server's.
extension CardVault {
    /// Applies a fetched event to the tokens standing for `merchantTokenID`:
    /// `UNLINK` unlinks them; `UPDATED_METADATA` and `UPDATED_CARD_ART` with metadata record it on
    /// them; anything else (`UPDATED_MERCHANT_TOKEN_PUBLIC_KEY`, an unknown type, an update
    /// without metadata) changes nothing. Idempotent: applying an event again changes nothing
    /// more (an unlink reports 0 tokens the second time). Store failures are
    /// `.databaseUnavailable`, so the caller retries the event later.
    public func applyMerchantTokenEvent(
        type: String, merchantTokenID: String, metadata: [UInt8]?
    ) async throws(VaultError) -> MerchantTokenEffect {
        let now = self.now
        let metadata = metadata.flatMap { $0.isEmpty ? nil : $0 }
        switch (type, metadata) {
        case ("UNLINK", _):
            // Apple's event: the merchant token is dead, for every organisation holding a token for it.
            return try await unlink(merchantTokenID, organization: nil)
        case ("UPDATED_METADATA", let metadata?), ("UPDATED_CARD_ART", let metadata?):
            let rows = try await eventStorage { () async throws(StorageError) in
                try await database.tokens(merchantTokenID: merchantTokenID).filter { $0.state != .deleted }
            }
            var recorded = 0
            for row in rows {
                if try await record(metadata, on: row, at: now) { recorded += 1 }
            }
            return MerchantTokenEffect(summary: "metadata recorded on \(Self.tokens(recorded))", tokens: recorded)
        default:
            return MerchantTokenEffect(summary: "recorded; no vault change for \(type)", tokens: 0)
        }
    }

    /// Merges `metadata` into what `row` holds and writes it, by a compare-and-set on what was
    /// read: a card-art event carries no card metadata and the other way round, each section
    /// replacing its own, so two events applied at once (on two instances) must not leave only the
    /// second's section. A write another event overtook reads the row again and merges anew.
    private func record(_ metadata: [UInt8], on row: TokenRecord, at now: Date) async throws(VaultError) -> Bool {
        var current = row
        for _ in 0..<Self.metadataAttempts {
            let merged = Self.mergedMetadata(current.merchantTokenMetadata, with: metadata)
            let written = try await eventStorage { () async throws(StorageError) in
                try await database.replaceMerchantTokenMetadata(
                    current.token, organization: current.organization, replacing: current.merchantTokenMetadata, with: merged, at: now)
            }
            if written { return true }
            let fresh = try await eventStorage { () async throws(StorageError) in
                try await database.token(current.token, organization: current.organization)
            }
            guard let fresh, fresh.state != .deleted else { return false }
            current = fresh
        }
        throw VaultError(.databaseUnavailable, "the event could not be applied: the token's metadata changed on every attempt")
    }

    static let metadataAttempts = 8

    /// A merchant's own unlink (the merchant-tokens API): only `organization`'s tokens for the
    /// merchant token stop working, and only they are counted, because two organisations may have
    /// paypages for one Apple merchant id. Apple's UNLINK event, which follows the call to Apple,
    /// then reaches every organisation's (by design: the merchant token itself is dead). nil (an
    /// admin) unlinks every organisation's at once.
    public func unlinkMerchantToken(_ merchantTokenID: String, organization: OrganizationID?) async throws(VaultError)
        -> MerchantTokenEffect
    {
        try await unlink(merchantTokenID, organization: organization)
    }

    private func unlink(_ merchantTokenID: String, organization: OrganizationID?) async throws(VaultError) -> MerchantTokenEffect {
        let now = self.now
        let unlinked = try await eventStorage { () async throws(StorageError) in
            try await database.unlinkTokens(merchantTokenID: merchantTokenID, organization: organization, at: now)
        }
        let summary = unlinked == 0 ? "no active token for this merchant token" : "unlinked \(Self.tokens(unlinked))"
        return MerchantTokenEffect(summary: summary, tokens: unlinked)
    }

    /// Deletes the tokens unlinked longer than ``VaultPolicy/unlinkedTokenRetention`` ago, with
    /// their sealed account numbers, in batches of 500 until none is left or 10 batches ran (the
    /// next run takes the rest); returns how many went.
    public func purgeUnlinkedTokens() async throws(VaultError) -> Int {
        let before = now.addingTimeInterval(-policy.unlinkedTokenRetention)
        var deleted = 0
        for _ in 0..<Self.unlinkedPurgeBatches {
            let batch = try await storage { () async throws(StorageError) in
                try await database.deleteUnlinkedTokens(before: before, limit: Self.unlinkedPurgeBatch)
            }
            deleted += batch
            if batch < Self.unlinkedPurgeBatch { break }
        }
        return deleted
    }

    /// The organisations holding a token (in any state but deleted) for the merchant token: those
    /// that may unlink it or change its notification URL.
    public func organizations(holdingMerchantToken merchantTokenID: String) async throws(VaultError) -> Set<OrganizationID> {
        let records = try await storage { () async throws(StorageError) in try await database.tokens(merchantTokenID: merchantTokenID) }
        return Set(records.filter { $0.state != .deleted }.map(\.organization))
    }

    /// `update`'s top-level sections (`cardArt`, `cardMetadata`) over `current`'s, as canonical
    /// JSON (the form a payload's metadata is stored in); `update` alone when `current` is absent or
    /// either is not a JSON object. Read by the strict reader the tokens use.
    static func mergedMetadata(_ current: [UInt8]?, with update: [UInt8]) -> [UInt8] {
        guard let current, let stored = CanonicalJSONObject(json: current), let sections = CanonicalJSONObject(json: update) else {
            return update
        }
        return stored.merging(sections).bytes
    }

    static let unlinkedPurgeBatch = 500
    static let unlinkedPurgeBatches = 10

    /// "1 token", "2 tokens".
    private static func tokens(_ count: Int) -> String {
        count == 1 ? "1 token" : "\(count) tokens"
    }

    /// A store call of an event's application: any failure is `.databaseUnavailable`, which the
    /// event queue retries.
    private func eventStorage<Value>(_ body: () async throws(StorageError) -> Value) async throws(VaultError) -> Value {
        do {
            return try await body()
        } catch {
            throw VaultError(.databaseUnavailable, "the event could not be applied: \(error)")
        }
    }
}
