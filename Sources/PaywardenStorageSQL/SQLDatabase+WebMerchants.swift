import Foundation
import PaywardenStorage

extension SQLDatabase: WebMerchantStore {
    static var webMerchantColumns: [String] {
        [
            "id", "partner_merchant_name", "encrypt_to", "merchant_url", "domain_names", "state", "organization",
            "domain_association_sha256", "created_at", "updated_at",
        ]
    }
    private static var selectWebMerchant: String { webMerchantColumns.joined(separator: ", ") }

    public func saveWebMerchant(_ record: WebMerchantRecord) async throws(StorageError) {
        let updates = Self.webMerchantColumns.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        _ = try await write(
            "INSERT INTO web_merchants (\(Self.selectWebMerchant)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
                + "ON CONFLICT (id) DO UPDATE SET \(updates)",
            [
                .text(record.id), .text(record.partnerMerchantName), .text(record.encryptTo), SQLValue(record.merchantURL),
                .stringList(record.domainNames), .text(record.state.rawValue), SQLValue(record.organization),
                SQLValue(record.domainAssociationSHA256), SQLValue(record.createdAt), SQLValue(record.updatedAt),
            ])
    }

    public func webMerchant(id: String) async throws(StorageError) -> WebMerchantRecord? {
        let rows = try await read("SELECT \(Self.selectWebMerchant) FROM web_merchants WHERE id = $1", [.text(id)])
        return try rows.first.map { row throws(StorageError) in try Self.webMerchant(row) }
    }

    public func webMerchants() async throws(StorageError) -> [WebMerchantRecord] {
        try await read("SELECT \(Self.selectWebMerchant) FROM web_merchants ORDER BY id", [], as: Self.webMerchant)
    }

    public func saveDomainAssociation(_ record: DomainAssociationRecord) async throws(StorageError) {
        _ = try await write(
            "INSERT INTO domain_associations (id, content, sha256, stored_at) VALUES (1, $1, $2, $3) "
                + "ON CONFLICT (id) DO UPDATE SET content = excluded.content, sha256 = excluded.sha256, stored_at = excluded.stored_at",
            [.blob(record.content), .text(record.sha256), SQLValue(record.storedAt)])
    }

    public func domainAssociation() async throws(StorageError) -> DomainAssociationRecord? {
        let rows = try await read("SELECT content, sha256, stored_at FROM domain_associations WHERE id = 1", [])
        return try rows.first.map { values throws(StorageError) in
            let row = SQLRowReader(values, columns: ["content", "sha256", "stored_at"], table: "domain_associations")
            return DomainAssociationRecord(content: try row.bytes(0), sha256: try row.text(1), storedAt: try row.date(2))
        }
    }

    static func webMerchant(_ values: [SQLValue]) throws(StorageError) -> WebMerchantRecord {
        var row = SQLRowReader(values, columns: webMerchantColumns, table: "web_merchants")
        let id = try row.text(0)
        row.row = id
        return WebMerchantRecord(
            id: id, partnerMerchantName: try row.text(1), encryptTo: try row.text(2), merchantURL: try row.optionalText(3),
            domainNames: try row.stringList(4), state: try row.choice(5, as: WebMerchantRecord.State.self),
            organization: try row.optionalText(6), domainAssociationSHA256: try row.optionalText(7), createdAt: try row.date(8),
            updatedAt: try row.date(9))
    }
}
