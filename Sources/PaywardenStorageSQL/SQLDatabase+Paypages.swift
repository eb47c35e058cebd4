import Foundation
import PaywardenStorage

extension SQLDatabase: PaypageStore {
    static var paypageColumns: [String] {
        ["id", "organization", "merchant_identifiers", "report_groups", "token_format", "enabled", "created_at"]
    }
    private static var selectPaypage: String { paypageColumns.joined(separator: ", ") }

    public func createPaypage(_ record: PaypageRecord) async throws(StorageError) {
        _ = try await write(
            "INSERT INTO paypages (\(Self.selectPaypage)) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [
                .text(record.id), .text(record.organization), .stringList(record.merchantIdentifiers), .stringList(record.reportGroups),
                .text(record.tokenFormat), SQLValue(record.enabled), SQLValue(record.createdAt),
            ])
    }

    public func paypage(id: String) async throws(StorageError) -> PaypageRecord? {
        let rows = try await read("SELECT \(Self.selectPaypage) FROM paypages WHERE id = $1", [.text(id)])
        return try rows.first.map { row throws(StorageError) in try Self.paypage(row) }
    }

    public func paypages() async throws(StorageError) -> [PaypageRecord] {
        try await read("SELECT \(Self.selectPaypage) FROM paypages ORDER BY id", [], as: Self.paypage)
    }

    public func setPaypage(id: String, enabled: Bool) async throws(StorageError) -> Bool {
        !(try await write("UPDATE paypages SET enabled = $2 WHERE id = $1 RETURNING 1", [.text(id), SQLValue(enabled)])).isEmpty
    }

    static func paypage(_ values: [SQLValue]) throws(StorageError) -> PaypageRecord {
        var row = SQLRowReader(values, columns: paypageColumns, table: "paypages")
        let id = try row.text(0)
        row.row = id
        return PaypageRecord(
            id: id, organization: try row.organization(1), merchantIdentifiers: try row.stringList(2), reportGroups: try row.stringList(3),
            tokenFormat: try row.text(4), enabled: try row.flag(5), createdAt: try row.date(6))
    }
}
