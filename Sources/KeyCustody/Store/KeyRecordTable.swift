import Foundation
import PKCS11
import PaywardenStorage

/// Key records and certificates in the database, read and written as ``KeyRecord`` values.
///
/// A record's ``KeyRecord/revision`` is the row's: every write names the revision it read, so an
/// admin on another machine who changed the key meanwhile is never overwritten.
struct KeyRecordTable: Sendable {
    let store: any KeyRecordStore

    struct Entry: Sendable {
        var record: Result<KeyRecord, CustodyError>
        var certificate: [UInt8]?
    }

    /// Every row, by key id; a row that does not decode is reported for its key, not hidden.
    func entries() async throws(CustodyError) -> [KeyIdentifier: Entry] {
        let rows: [StoredKeyRecord]
        do { rows = try await store.keyRecords() } catch { throw Self.failure(error) }
        var entries: [KeyIdentifier: Entry] = [:]
        for row in rows {
            guard let id = KeyIdentifier(hex: row.keyID) else { continue }
            let record: Result<KeyRecord, CustodyError>
            do {
                var decoded = try KeyRecord.decode(row.record)
                decoded.revision = row.revision
                record = .success(decoded)
            } catch {
                record = .failure(CustodyError(.storage, "the record of key \(id) in the database is unreadable"))
            }
            entries[id] = Entry(record: record, certificate: row.certificate)
        }
        return entries
    }

    /// Inserts the first record of `id` (at revision 1 unless it carries one, as an earlier
    /// build's record does) and returns it as written; nil when the key already has a record.
    func insert(_ record: KeyRecord, certificate: [UInt8]?, for id: KeyIdentifier, at now: Date) async throws(CustodyError)
        -> KeyRecord?
    {
        var record = record
        record.revision = max(record.revision, 1)
        do throws(StorageError) {
            return try await store.insertKeyRecord(try Self.row(record, certificate: certificate, id: id, at: now)) ? record : nil
        } catch {
            throw Self.failure(error)
        }
    }

    /// Replaces the record `previous` (as read) with `record` and `certificate`, and returns it as
    /// written; refuses, changing nothing, when another writer changed it since.
    func update(
        _ record: KeyRecord, certificate: [UInt8]?, for id: KeyIdentifier, replacing previous: KeyRecord, at now: Date
    ) async throws(CustodyError) -> KeyRecord {
        var record = record
        record.revision = previous.revision + 1
        let updated: Bool
        do throws(StorageError) {
            updated = try await store.updateKeyRecord(
                try Self.row(record, certificate: certificate, id: id, at: now), expectedRevision: previous.revision)
        } catch {
            throw Self.failure(error)
        }
        guard updated else {
            throw CustodyError(
                .invalidState,
                "key \(id) was changed by another admin or instance while this command ran; nothing was written: run "
                    + "`paywarden keys list` and the command again")
        }
        return record
    }

    /// Deletes the record `previous` (as read); false, deleting nothing, when another writer
    /// changed it since.
    func delete(_ id: KeyIdentifier, replacing previous: KeyRecord) async throws(CustodyError) -> Bool {
        do {
            return try await store.deleteKeyRecord(keyID: id.hex, expectedRevision: previous.revision)
        } catch {
            throw Self.failure(error)
        }
    }

    private static func row(_ record: KeyRecord, certificate: [UInt8]?, id: KeyIdentifier, at now: Date) throws(StorageError)
        -> StoredKeyRecord
    {
        let encoded: [UInt8]
        do { encoded = try record.encoded() } catch {
            throw StorageError(.corrupt, "the record of key \(id) could not be encoded", table: "merchant_keys", row: id.hex)
        }
        return StoredKeyRecord(keyID: id.hex, record: encoded, certificate: certificate, revision: record.revision, updatedAt: now)
    }

    /// The key each upstream's client presents; rows naming no valid key id are left out.
    func upstreamKeysInUse() async throws(CustodyError) -> [UpstreamKeyInUse] {
        do throws(StorageError) {
            return try await store.upstreamClientKeys().compactMap { row in
                KeyIdentifier(hex: row.keyID).map { UpstreamKeyInUse(upstream: row.upstream, keyID: $0, since: row.since) }
            }
        } catch {
            throw Self.failure(error)
        }
    }

    /// Records that `id` is presented to `upstream` from `now` (unchanged when it already was).
    func recordUpstreamKeyInUse(_ id: KeyIdentifier, upstream: String, at now: Date) async throws(CustodyError) {
        do throws(StorageError) {
            _ = try await store.recordUpstreamClientKey(UpstreamClientKeyRecord(upstream: upstream, keyID: id.hex, since: now))
        } catch {
            throw Self.failure(error)
        }
    }

    static func failure(_ error: StorageError) -> CustodyError {
        switch error.category {
        case .unavailable:
            CustodyError(.databaseUnavailable, "the database holding the key records is unavailable (\(error)); retry once it answers")
        case .schema:
            CustodyError(.storage, "the database holding the key records cannot be used: \(error)")
        case .conflict, .corrupt:
            CustodyError(.storage, "the key records could not be read or written: \(error)")
        }
    }
}
