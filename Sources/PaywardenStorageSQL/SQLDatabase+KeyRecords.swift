import Foundation
import PaywardenStorage

extension SQLDatabase: KeyRecordStore {
    private static var keyRecordColumns: [String] { ["key_id", "record", "certificate", "revision", "updated_at"] }

    public func keyRecords() async throws(StorageError) -> [StoredKeyRecord] {
        var records: [StoredKeyRecord] = []
        for values in try await read("SELECT \(Self.keyRecordColumns.joined(separator: ", ")) FROM merchant_keys", []) {
            var row = SQLRowReader(values, columns: Self.keyRecordColumns, table: "merchant_keys")
            let keyID = try row.text(0)
            row.row = keyID
            records.append(
                StoredKeyRecord(
                    keyID: keyID, record: try row.bytes(1), certificate: try row.optionalBytes(2), revision: try row.integer(3),
                    updatedAt: try row.date(4)))
        }
        return records.sorted { $0.keyID < $1.keyID }
    }

    public func insertKeyRecord(_ record: StoredKeyRecord) async throws(StorageError) -> Bool {
        !(try await write(
            """
            INSERT INTO merchant_keys (\(Self.keyRecordColumns.joined(separator: ", "))) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (key_id) DO NOTHING RETURNING 1
            """, Self.binds(record))).isEmpty
    }

    public func updateKeyRecord(_ record: StoredKeyRecord, expectedRevision: Int) async throws(StorageError) -> Bool {
        !(try await write(
            """
            UPDATE merchant_keys SET record = $2, certificate = $3, revision = $4, updated_at = $5
            WHERE key_id = $1 AND revision = $6 RETURNING 1
            """, Self.binds(record) + [SQLValue(expectedRevision)])).isEmpty
    }

    public func deleteKeyRecord(keyID: String, expectedRevision: Int) async throws(StorageError) -> Bool {
        !(try await write(
            "DELETE FROM merchant_keys WHERE key_id = $1 AND revision = $2 RETURNING 1", [.text(keyID), SQLValue(expectedRevision)]
        )).isEmpty
    }

    public func upstreamClientKeys() async throws(StorageError) -> [UpstreamClientKeyRecord] {
        let columns = ["upstream", "key_id", "since"]
        var records: [UpstreamClientKeyRecord] = []
        for values in try await read("SELECT upstream, key_id, since FROM upstream_client_keys", []) {
            var row = SQLRowReader(values, columns: columns, table: "upstream_client_keys")
            let upstream = try row.text(0)
            row.row = upstream
            records.append(UpstreamClientKeyRecord(upstream: upstream, keyID: try row.text(1), since: try row.date(2)))
        }
        // Sorted here: byte order, whatever the engine's collation.
        return records.sorted { $0.upstream < $1.upstream }
    }

    public func recordUpstreamClientKey(_ record: UpstreamClientKeyRecord) async throws(StorageError) -> Bool {
        // One statement: a second instance recording the same key keeps the first one's time.
        !(try await write(
            """
            INSERT INTO upstream_client_keys (upstream, key_id, since) VALUES ($1, $2, $3)
            ON CONFLICT (upstream) DO UPDATE SET key_id = excluded.key_id, since = excluded.since
            WHERE upstream_client_keys.key_id <> excluded.key_id RETURNING 1
            """, [.text(record.upstream), .text(record.keyID), SQLValue(record.since)])).isEmpty
    }

    private static func binds(_ record: StoredKeyRecord) -> [SQLValue] {
        [
            .text(record.keyID), .blob(record.record), SQLValue(record.certificate), SQLValue(record.revision),
            SQLValue(record.updatedAt),
        ]
    }
}
