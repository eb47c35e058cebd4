import Foundation
import PaywardenStorage

extension SQLDatabase: EventStore {
    static var eventColumns: [String] {
        [
            "id", "merchant_identifier", "merchant_token_id", "kind", "state", "attempts", "last_error", "received_at", "updated_at",
            "detail",
        ]
    }
    private static var selectEvent: String { eventColumns.joined(separator: ", ") }

    public func recordEvent(_ record: MerchantTokenEventRecord) async throws(StorageError) -> Bool {
        let rows = try await write(
            """
            INSERT INTO merchant_token_events (\(Self.selectEvent)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (id) DO NOTHING RETURNING 1
            """,
            [
                .text(record.id), .text(record.merchantIdentifier), .text(record.merchantTokenID), .text(record.kind),
                .text(record.state.rawValue), SQLValue(record.attempts), SQLValue(record.lastError), SQLValue(record.receivedAt),
                SQLValue(record.updatedAt), SQLValue(record.detail),
            ])
        return !rows.isEmpty
    }

    public func event(id: String) async throws(StorageError) -> MerchantTokenEventRecord? {
        let rows = try await read("SELECT \(Self.selectEvent) FROM merchant_token_events WHERE id = $1", [.text(id)])
        return try rows.first.map { row throws(StorageError) in try Self.event(row) }
    }

    public func events(state: MerchantTokenEventRecord.State, limit: Int) async throws(StorageError) -> [MerchantTokenEventRecord] {
        let rows = try await read(
            "SELECT \(Self.selectEvent) FROM merchant_token_events WHERE state = $1 ORDER BY received_at, id LIMIT $2",
            [.text(state.rawValue), SQLValue(limit)])
        var records: [MerchantTokenEventRecord] = []
        for row in rows { records.append(try Self.event(row)) }
        return records
    }

    public func updateEvent(
        id: String, state: MerchantTokenEventRecord.State, attempts: Int, lastError: String?, at now: Date
    ) async throws(StorageError) -> Bool {
        let rows = try await write(
            "UPDATE merchant_token_events SET state = $2, attempts = $3, last_error = $4, updated_at = $5 WHERE id = $1 RETURNING 1",
            [.text(id), .text(state.rawValue), SQLValue(attempts), SQLValue(lastError), SQLValue(now)])
        return !rows.isEmpty
    }

    static func event(_ values: [SQLValue]) throws(StorageError) -> MerchantTokenEventRecord {
        var row = SQLRowReader(values, columns: eventColumns, table: "merchant_token_events")
        let id = try row.text(0)
        row.row = id
        return MerchantTokenEventRecord(
            id: id, merchantIdentifier: try row.text(1), merchantTokenID: try row.text(2), kind: try row.text(3),
            state: try row.choice(4, as: MerchantTokenEventRecord.State.self), attempts: try row.integer(5),
            lastError: try row.optionalText(6), receivedAt: try row.date(7), updatedAt: try row.date(8), detail: try row.optionalBytes(9))
    }
}
