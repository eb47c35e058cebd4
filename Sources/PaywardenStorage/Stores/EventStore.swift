import Foundation

/// Apple's merchant-token events: each recorded once, applied, retried when applying failed.
public protocol EventStore: Sendable {
    /// Records a new event; false when its id was recorded before (the notification came again).
    func recordEvent(_ record: MerchantTokenEventRecord) async throws(StorageError) -> Bool
    func event(id: String) async throws(StorageError) -> MerchantTokenEventRecord?
    /// Events in `state`, oldest first.
    func events(state: MerchantTokenEventRecord.State, limit: Int) async throws(StorageError) -> [MerchantTokenEventRecord]
    /// Sets an event's state after an attempt; false when the id is unknown.
    func updateEvent(
        id: String, state: MerchantTokenEventRecord.State, attempts: Int, lastError: String?, at now: Date
    ) async throws(StorageError) -> Bool
}
