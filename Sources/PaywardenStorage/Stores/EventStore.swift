import Foundation

/// Apple's merchant-token events: each recorded once, fetched and applied, retried when that
/// failed, and kept for admins. Several instances may work the same queue: an update is a
/// compare-and-set on the attempts counter, so only one of them moves an event at a time.
public protocol EventStore: Sendable {
    /// Records a new event; false when its id was recorded before (the notification came again),
    /// which leaves the stored event unchanged.
    func recordEvent(_ record: MerchantTokenEventRecord) async throws(StorageError) -> Bool
    func event(id: String) async throws(StorageError) -> MerchantTokenEventRecord?
    /// Up to `limit` pending events due at `now` (`nextAttemptAt <= now`), the longest due first
    /// (then by id).
    func dueEvents(at now: Date, limit: Int) async throws(StorageError) -> [MerchantTokenEventRecord]
    /// Up to `limit` events in `state` (every state when nil), the most recently received first.
    func events(state: MerchantTokenEventRecord.State?, limit: Int) async throws(StorageError) -> [MerchantTokenEventRecord]
    func eventCount(state: MerchantTokenEventRecord.State) async throws(StorageError) -> Int
    /// Deletes up to `limit` applied or failed events last updated before `before`, the oldest
    /// first (the event log's retention); pending ones are never deleted. Returns how many went.
    func deleteSettledEvents(before: Date, limit: Int) async throws(StorageError) -> Int
    /// Compare-and-set: writes every mutable field (state, eventType, merchantTokenID, attempts,
    /// nextAttemptAt, lastError, effect, updatedAt, detail; never id, merchantIdentifier or
    /// receivedAt) only while the stored row's attempts equal `expectedAttempts`. False otherwise
    /// (another instance moved it) or when the id is unknown.
    func updateEvent(_ record: MerchantTokenEventRecord, expectedAttempts: Int) async throws(StorageError) -> Bool
}
