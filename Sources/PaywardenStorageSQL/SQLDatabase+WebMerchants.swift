import Foundation
import PaywardenPrimitives
import PaywardenStorage

extension SQLDatabase: WebMerchantStore {
    static var webMerchantColumns: [String] {
        [
            "id", "partner_merchant_name", "encrypt_to", "merchant_url", "domain_names", "state", "organization",
            "domain_association_sha256", "created_at", "updated_at",
        ]
    }
    private static var selectWebMerchant: String { webMerchantColumns.joined(separator: ", ") }
    static var webMerchantDomainColumns: [String] { ["domain", "organization", "merchant_id", "proof", "proved_at"] }
    private static var selectWebMerchantDomain: String { webMerchantDomainColumns.joined(separator: ", ") }

    public func webMerchant(id: String) async throws(StorageError) -> WebMerchantRecord? {
        let rows = try await read("SELECT \(Self.selectWebMerchant) FROM web_merchants WHERE id = $1", [.text(id)])
        return try rows.first.map { row throws(StorageError) in try Self.webMerchant(row) }
    }

    public func webMerchants() async throws(StorageError) -> [WebMerchantRecord] {
        try await read("SELECT \(Self.selectWebMerchant) FROM web_merchants ORDER BY id", [], as: Self.webMerchant)
    }

    // MARK: Changes

    public func beginWebMerchantChange(_ change: WebMerchantChange) async throws(StorageError) -> WebMerchantChangeStart {
        let rows: [[SQLValue]]
        if let reservation = change.reservation {
            // One statement: the identifier is inserted for its organisation, or, when it exists,
            // held by this change if it is the organisation's (or a lapsed reservation) and free.
            rows = try await write(
                """
                INSERT INTO web_merchants (\(Self.selectWebMerchant), change_id, change_until)
                VALUES ($1, $2, $3, $4, $5, 'reserved', $6, NULL, $7, $7, $8, $9)
                ON CONFLICT (id) DO UPDATE SET change_id = excluded.change_id, change_until = excluded.change_until,
                  organization = CASE WHEN web_merchants.state = 'reserved' THEN excluded.organization ELSE web_merchants.organization END
                WHERE (web_merchants.change_until IS NULL OR web_merchants.change_until <= $7)
                  AND (web_merchants.organization = excluded.organization OR web_merchants.state = 'reserved')
                RETURNING \(Self.selectWebMerchant)
                """,
                [
                    .text(reservation.id), .text(reservation.partnerMerchantName), .text(reservation.encryptTo),
                    SQLValue(reservation.merchantURL), .stringList([]), SQLValue(reservation.organization), SQLValue(change.now),
                    .text(change.changeID), SQLValue(change.until),
                ])
        } else {
            rows = try await write(
                """
                UPDATE web_merchants SET change_id = $2, change_until = $3
                WHERE id = $1 AND (change_until IS NULL OR change_until <= $4) AND (CAST($5 AS TEXT) IS NULL OR organization = $5)
                RETURNING \(Self.selectWebMerchant)
                """,
                [
                    .text(change.merchantID), .text(change.changeID), SQLValue(change.until), SQLValue(change.now),
                    SQLValue(change.organization),
                ])
        }
        if let row = rows.first { return .started(try Self.webMerchant(row)) }
        guard let existing = try await webMerchant(id: change.merchantID) else { return .absent }
        return .refused(existing)
    }

    public func finishWebMerchantChange(_ record: WebMerchantRecord, changeID: String) async throws(StorageError) -> Bool {
        // Compare-and-set on the change and on the organisation read when it began.
        let rows = try await write(
            """
            UPDATE web_merchants SET partner_merchant_name = $2, encrypt_to = $3, merchant_url = $4, domain_names = $5, state = $6,
              domain_association_sha256 = $7, created_at = $8, updated_at = $9, change_id = NULL, change_until = NULL
            WHERE id = $1 AND change_id = $10 AND (organization = $11 OR (organization IS NULL AND CAST($11 AS TEXT) IS NULL))
            RETURNING 1
            """,
            [
                .text(record.id), .text(record.partnerMerchantName), .text(record.encryptTo), SQLValue(record.merchantURL),
                .stringList(record.domainNames), .text(record.state.rawValue), SQLValue(record.domainAssociationSHA256),
                SQLValue(record.createdAt), SQLValue(record.updatedAt), .text(changeID), SQLValue(record.organization),
            ])
        return !rows.isEmpty
    }

    public func abandonWebMerchantChange(id: String, changeID: String) async throws(StorageError) {
        _ = try await write(
            "DELETE FROM web_merchants WHERE id = $1 AND change_id = $2 AND state = 'reserved' RETURNING 1", [.text(id), .text(changeID)])
        _ = try await write(
            "UPDATE web_merchants SET change_id = NULL, change_until = NULL WHERE id = $1 AND change_id = $2 RETURNING 1",
            [.text(id), .text(changeID)])
    }

    // MARK: Domains

    public func webMerchantDomains(_ domains: [String]) async throws(StorageError) -> [WebMerchantDomainRecord] {
        var found: [WebMerchantDomainRecord] = []
        for domain in Set(domains) {
            found += try await read(
                "SELECT \(Self.selectWebMerchantDomain) FROM web_merchant_domains WHERE domain = $1", [.text(domain)],
                as: Self.webMerchantDomain)
        }
        return found
    }

    public func allWebMerchantDomains() async throws(StorageError) -> [WebMerchantDomainRecord] {
        try await read(
            "SELECT \(Self.selectWebMerchantDomain) FROM web_merchant_domains ORDER BY domain", [], as: Self.webMerchantDomain)
    }

    public func claimWebMerchantDomain(_ record: WebMerchantDomainRecord) async throws(StorageError) -> Bool {
        let rows = try await write(
            """
            INSERT INTO web_merchant_domains (\(Self.selectWebMerchantDomain)) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (domain) DO NOTHING RETURNING 1
            """, Self.webMerchantDomainValues(record))
        return !rows.isEmpty
    }

    public func bindWebMerchantDomain(_ domain: String, organization: OrganizationID, merchantID: String) async throws(StorageError) -> Bool
    {
        let rows = try await write(
            """
            UPDATE web_merchant_domains SET merchant_id = $3
            WHERE domain = $1 AND organization = $2 AND (merchant_id IS NULL OR merchant_id = $3) RETURNING 1
            """, [.text(domain), .text(organization), .text(merchantID)])
        return !rows.isEmpty
    }

    public func unbindWebMerchantDomain(_ domain: String, merchantID: String) async throws(StorageError) -> Bool {
        let rows = try await write(
            "UPDATE web_merchant_domains SET merchant_id = NULL WHERE domain = $1 AND merchant_id = $2 RETURNING 1",
            [.text(domain), .text(merchantID)])
        return !rows.isEmpty
    }

    public func assignWebMerchantDomain(_ record: WebMerchantDomainRecord) async throws(StorageError) -> Bool {
        let rows = try await write(
            """
            INSERT INTO web_merchant_domains (\(Self.selectWebMerchantDomain)) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (domain) DO UPDATE SET organization = excluded.organization, proof = excluded.proof, proved_at = excluded.proved_at
            WHERE web_merchant_domains.merchant_id IS NULL RETURNING 1
            """, Self.webMerchantDomainValues(record))
        return !rows.isEmpty
    }

    public func webMerchantDomainChallenge(organization: OrganizationID, proposed: String, at now: Date) async throws(StorageError)
        -> String
    {
        _ = try await write(
            """
            INSERT INTO web_merchant_domain_challenges (organization, challenge, created_at) VALUES ($1, $2, $3)
            ON CONFLICT (organization) DO NOTHING RETURNING 1
            """, [.text(organization), .text(proposed), SQLValue(now)])
        let rows = try await read(
            "SELECT challenge FROM web_merchant_domain_challenges WHERE organization = $1", [.text(organization)])
        guard let row = rows.first else {
            throw StorageError(.unavailable, "the organisation's domain challenge was not found after it was written")
        }
        return try SQLRowReader(row, columns: ["challenge"], table: "web_merchant_domain_challenges").text(0)
    }

    private static func webMerchantDomainValues(_ record: WebMerchantDomainRecord) -> [SQLValue] {
        [
            .text(record.domain), .text(record.organization), SQLValue(record.merchantID), .text(record.proof.rawValue),
            SQLValue(record.provedAt),
        ]
    }

    // MARK: The domain-verification file

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
            organization: try row.optionalOrganization(6), domainAssociationSHA256: try row.optionalText(7), createdAt: try row.date(8),
            updatedAt: try row.date(9))
    }

    static func webMerchantDomain(_ values: [SQLValue]) throws(StorageError) -> WebMerchantDomainRecord {
        var row = SQLRowReader(values, columns: webMerchantDomainColumns, table: "web_merchant_domains")
        let domain = try row.text(0)
        row.row = domain
        return WebMerchantDomainRecord(
            domain: domain, organization: try row.organization(1), merchantID: try row.optionalText(2),
            proof: try row.choice(3, as: WebMerchantDomainRecord.Proof.self), provedAt: try row.date(4))
    }
}
