import Foundation
import PaywardenStorage

extension SQLDatabase: EventStore {
    static var eventColumns: [String] {
        [
            "id", "merchant_identifier", "state", "event_type", "merchant_token_id", "attempts", "next_attempt_at", "last_error", "effect",
            "received_at", "updated_at", "detail",
        ]
    }
    private static var selectEvent: String { eventColumns.joined(separator: ", ") }

    public func recordEvent(_ record: MerchantTokenEventRecord) async throws(StorageError) -> Bool {
        let rows = try await write(
            """
            INSERT INTO merchant_token_events (\(Self.selectEvent)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            ON CONFLICT (id) DO NOTHING RETURNING 1
            """,
            [
                .text(record.id), .text(record.merchantIdentifier), .text(record.state.rawValue), SQLValue(record.eventType),
                SQLValue(record.merchantTokenID), SQLValue(record.attempts), SQLValue(record.nextAttemptAt), SQLValue(record.lastError),
                SQLValue(record.effect), SQLValue(record.receivedAt), SQLValue(record.updatedAt), SQLValue(record.detail),
            ])
        return !rows.isEmpty
    }

    public func event(id: String) async throws(StorageError) -> MerchantTokenEventRecord? {
        let rows = try await read("SELECT \(Self.selectEvent) FROM merchant_token_events WHERE id = $1", [.text(id)])
        return try rows.first.map { row throws(StorageError) in try Self.event(row) }
    }

    public func dueEvents(at now: Date, limit: Int) async throws(StorageError) -> [MerchantTokenEventRecord] {
        try await read(
            """
            SELECT \(Self.selectEvent) FROM merchant_token_events WHERE state = $1 AND next_attempt_at <= $2
            ORDER BY next_attempt_at, id LIMIT $3
            """, [.text(MerchantTokenEventRecord.State.pending.rawValue), SQLValue(now), SQLValue(limit)], as: Self.event)
    }

    public func events(state: MerchantTokenEventRecord.State?, limit: Int) async throws(StorageError) -> [MerchantTokenEventRecord] {
        if let state {
            try await read(
                "SELECT \(Self.selectEvent) FROM merchant_token_events WHERE state = $1 ORDER BY received_at DESC, id DESC LIMIT $2",
                [.text(state.rawValue), SQLValue(limit)], as: Self.event)
        } else {
            try await read(
                "SELECT \(Self.selectEvent) FROM merchant_token_events ORDER BY received_at DESC, id DESC LIMIT $1", [SQLValue(limit)],
                as: Self.event)
        }
    }

    public func eventCount(state: MerchantTokenEventRecord.State) async throws(StorageError) -> Int {
        let rows = try await read("SELECT count(*) FROM merchant_token_events WHERE state = $1", [.text(state.rawValue)])
        return try SQLRowReader(rows.first ?? [], columns: ["count"], table: "merchant_token_events").integer(0)
    }

    public func deleteSettledEvents(before: Date, limit: Int) async throws(StorageError) -> Int {
        // As the token purge: a subquery on the key stands in for DELETE … LIMIT.
        try await write(
            """
            DELETE FROM merchant_token_events WHERE id IN
              (SELECT id FROM merchant_token_events WHERE state <> $1 AND updated_at < $2 ORDER BY updated_at, id LIMIT $3)
            RETURNING 1
            """, [.text(MerchantTokenEventRecord.State.pending.rawValue), SQLValue(before), SQLValue(max(limit, 0))]
        ).count
    }

    public func updateEvent(_ record: MerchantTokenEventRecord, expectedAttempts: Int) async throws(StorageError) -> Bool {
        // Compare-and-set on attempts: an instance that read the row before another moved it
        // finds the counter changed and leaves the row alone.
        let rows = try await write(
            """
            UPDATE merchant_token_events SET state = $3, event_type = $4, merchant_token_id = $5, attempts = $6, next_attempt_at = $7,
              last_error = $8, effect = $9, updated_at = $10, detail = $11
            WHERE id = $1 AND attempts = $2 RETURNING 1
            """,
            [
                .text(record.id), SQLValue(expectedAttempts), .text(record.state.rawValue), SQLValue(record.eventType),
                SQLValue(record.merchantTokenID), SQLValue(record.attempts), SQLValue(record.nextAttemptAt), SQLValue(record.lastError),
                SQLValue(record.effect), SQLValue(record.updatedAt), SQLValue(record.detail),
            ])
        return !rows.isEmpty
    }

    static func event(_ values: [SQLValue]) throws(StorageError) -> MerchantTokenEventRecord {
        var row = SQLRowReader(values, columns: eventColumns, table: "merchant_token_events")
        let id = try row.text(0)
        row.row = id
        return MerchantTokenEventRecord(
            id: id, merchantIdentifier: try row.text(1), receivedAt: try row.date(9),
            state: try row.choice(2, as: MerchantTokenEventRecord.State.self), eventType: try row.optionalText(3),
            merchantTokenID: try row.optionalText(4), attempts: try row.integer(5), nextAttemptAt: try row.date(6),
            lastError: try row.optionalText(7), effect: try row.optionalText(8), updatedAt: try row.date(10),
            detail: try row.optionalBytes(11))
    }
}
