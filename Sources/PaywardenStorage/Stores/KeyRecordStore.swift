/// Merchant-key records, written by the admin commands and read by every instance at each key
/// refresh. Writes are single-row and conditional, so two writers never lose each other's change.
public protocol KeyRecordStore: Sendable {
    /// Every record, by key id.
    func keyRecords() async throws(StorageError) -> [StoredKeyRecord]
    /// Inserts `record` (its revision as given); false, changing nothing, when the key id exists.
    func insertKeyRecord(_ record: StoredKeyRecord) async throws(StorageError) -> Bool
    /// Compare-and-set: replaces the row's record, certificate, revision and time only while its
    /// revision is `expectedRevision`. False otherwise, or when the key id is unknown.
    func updateKeyRecord(_ record: StoredKeyRecord, expectedRevision: Int) async throws(StorageError) -> Bool
    /// Compare-and-set: deletes the row only while its revision is `expectedRevision`. False
    /// otherwise (another writer changed it), or when the key id is unknown.
    func deleteKeyRecord(keyID: String, expectedRevision: Int) async throws(StorageError) -> Bool
    /// The key each upstream's client presents, by upstream.
    func upstreamClientKeys() async throws(StorageError) -> [UpstreamClientKeyRecord]
    /// Records that `record.keyID` is now presented to `record.upstream`: one conditional write,
    /// which keeps the first `since` while the key stays the same (every instance records its
    /// choice at start). True when the row changed.
    func recordUpstreamClientKey(_ record: UpstreamClientKeyRecord) async throws(StorageError) -> Bool
}
