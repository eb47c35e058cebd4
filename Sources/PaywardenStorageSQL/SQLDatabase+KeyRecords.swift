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

    private static func binds(_ record: StoredKeyRecord) -> [SQLValue] {
        [
            .text(record.keyID), .blob(record.record), SQLValue(record.certificate), SQLValue(record.revision),
            SQLValue(record.updatedAt),
        ]
    }
}
