import Foundation
import PaywardenPrimitives
import PaywardenStorage

extension SQLDatabase: TokenStore {
    static var tokenColumns: [String] {
        [
            "organization", "token", "fingerprint", "fingerprint_key_id", "account_kind", "merchant_token_id", "state", "key_id",
            "wrap_path", "wrapped_key", "ciphertext", "payload_version", "created_at", "updated_at", "merchant_token_metadata",
        ]
    }
    private static var selectToken: String { tokenColumns.joined(separator: ", ") }

    public func insertToken(_ record: TokenRecord) async throws(StorageError) -> TokenInsertion {
        let outcome = try await engine.writeDurably(Self.tokenInsertionSteps(record))
        return try Self.tokenInsertion(record, inserted: outcome.rows(0), existing: outcome.rows(1))
    }

    /// Inserts `record`, or reads the organisation's token for the same account: a token value
    /// taken in the organisation is a primary-key conflict (thrown, the vault redraws); the same
    /// account number is the (organization, fingerprint) conflict, which inserts nothing, so the
    /// existing row is read, on the connection that wrote (it sees the row that one saw).
    static func tokenInsertionSteps(_ record: TokenRecord) -> [SQLWriteStep] {
        [
            SQLWriteStep(
                """
                INSERT INTO high_value_tokens (\(selectToken))
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                ON CONFLICT (organization, fingerprint) DO NOTHING RETURNING 1
                """,
                [
                    .text(record.organization), .text(record.token), .blob(record.fingerprint), .text(record.fingerprintKeyID),
                    .text(record.accountKind.rawValue), SQLValue(record.merchantTokenID), .text(record.state.rawValue),
                    .text(record.sealed.keyID), .text(record.sealed.wrapPath), .blob(record.sealed.wrappedKey),
                    .blob(record.sealed.ciphertext), SQLValue(record.sealed.version), SQLValue(record.createdAt),
                    SQLValue(record.updatedAt), SQLValue(record.merchantTokenMetadata),
                ]),
            SQLWriteStep(
                "SELECT \(selectToken) FROM high_value_tokens WHERE organization = $1 AND fingerprint = $2",
                [.text(record.organization), .blob(record.fingerprint)], when: .previousReturnedNoRows),
        ]
    }

    /// What ``tokenInsertionSteps(_:)`` did, from the rows of its insert and its read.
    static func tokenInsertion(
        _ record: TokenRecord, inserted: [[SQLValue]]?, existing: [[SQLValue]]?
    ) throws(StorageError) -> TokenInsertion {
        if let inserted, !inserted.isEmpty { return .inserted(record) }
        guard let row = existing?.first else {
            throw StorageError(
                .conflict, "a token for the account number was reported but cannot be read; retry", table: "high_value_tokens")
        }
        return .existing(try token(row))
    }

    public func token(_ token: String, organization: OrganizationID) async throws(StorageError) -> TokenRecord? {
        let rows = try await read(
            "SELECT \(Self.selectToken) FROM high_value_tokens WHERE organization = $1 AND token = $2", [.text(organization), .text(token)])
        return try rows.first.map { row throws(StorageError) in try Self.token(row) }
    }

    public func token(fingerprint: [UInt8], organization: OrganizationID) async throws(StorageError) -> TokenRecord? {
        let rows = try await read(
            "SELECT \(Self.selectToken) FROM high_value_tokens WHERE organization = $1 AND fingerprint = $2",
            [.text(organization), .blob(fingerprint)])
        return try rows.first.map { row throws(StorageError) in try Self.token(row) }
    }

    public func tokens(merchantTokenID: String) async throws(StorageError) -> [TokenRecord] {
        try await read(
            "SELECT \(Self.selectToken) FROM high_value_tokens WHERE merchant_token_id = $1 ORDER BY organization",
            [.text(merchantTokenID)], as: Self.token)
    }

    public func updateToken(
        _ token: String, organization: OrganizationID, state: TokenRecord.State, sealed: SealedPayload?, at now: Date
    ) async throws(StorageError) -> TokenRecord? {
        // The sealed columns change together or not at all (COALESCE keeps each when none is given).
        let rows = try await write(
            """
            UPDATE high_value_tokens SET state = $3, updated_at = $4, key_id = COALESCE($5, key_id),
              wrap_path = COALESCE($6, wrap_path), wrapped_key = COALESCE($7, wrapped_key), ciphertext = COALESCE($8, ciphertext),
              payload_version = COALESCE($9, payload_version)
            WHERE organization = $1 AND token = $2
            RETURNING \(Self.selectToken)
            """,
            [
                .text(organization), .text(token), .text(state.rawValue), SQLValue(now), SQLValue(sealed?.keyID),
                SQLValue(sealed?.wrapPath),
                SQLValue(sealed?.wrappedKey), SQLValue(sealed?.ciphertext), sealed.map { SQLValue($0.version) } ?? .null,
            ])
        return try rows.first.map { row throws(StorageError) in try Self.token(row) }
    }

    public func replaceTokenPayload(
        _ token: String, organization: OrganizationID, replacing previous: SealedPayload, with sealed: SealedPayload, at now: Date
    ) async throws(StorageError) -> Bool {
        // Compare-and-set on the ciphertext read and the active state; the state is never written.
        let rows = try await write(
            """
            UPDATE high_value_tokens SET key_id = $4, wrap_path = $5, wrapped_key = $6, ciphertext = $7, payload_version = $8,
              updated_at = $9
            WHERE organization = $1 AND token = $2 AND ciphertext = $3 AND state = $10 RETURNING 1
            """,
            [
                .text(organization), .text(token), .blob(previous.ciphertext), .text(sealed.keyID), .text(sealed.wrapPath),
                .blob(sealed.wrappedKey), .blob(sealed.ciphertext), SQLValue(sealed.version), SQLValue(now),
                .text(TokenRecord.State.active.rawValue),
            ])
        return !rows.isEmpty
    }

    public func deleteToken(_ token: String, organization: OrganizationID) async throws(StorageError) -> Bool {
        let rows = try await write(
            "DELETE FROM high_value_tokens WHERE organization = $1 AND token = $2 RETURNING 1", [.text(organization), .text(token)])
        return !rows.isEmpty
    }

    // MARK: Merchant-token events

    public func unlinkTokens(merchantTokenID: String, organization: OrganizationID?, at now: Date) async throws(StorageError) -> Int {
        var binds: [SQLValue] = [
            .text(merchantTokenID), .text(TokenRecord.State.unlinked.rawValue), SQLValue(now), .text(TokenRecord.State.active.rawValue),
        ]
        // One organisation's tokens, or (Apple's event) every organisation's.
        var scope = ""
        if let organization {
            scope = " AND organization = $5"
            binds.append(.text(organization))
        }
        return try await write(
            """
            UPDATE high_value_tokens SET state = $2, updated_at = $3
            WHERE merchant_token_id = $1 AND state = $4\(scope) RETURNING 1
            """, binds
        ).count
    }

    public func replaceMerchantTokenMetadata(
        _ token: String, organization: OrganizationID, replacing expected: [UInt8]?, with metadata: [UInt8], at now: Date
    ) async throws(StorageError) -> Bool {
        // An unlinked row keeps its updated_at: its retention runs from the unlinking. The metadata
        // read is compared whole ($7 says it was none, which no blob comparison can say).
        !(try await write(
            """
            UPDATE high_value_tokens SET merchant_token_metadata = $3,
              updated_at = CASE WHEN state = $5 THEN $4 ELSE updated_at END
            WHERE organization = $1 AND token = $2 AND state IN ($5, $6)
              AND ((merchant_token_metadata IS NULL AND $7 = 1) OR merchant_token_metadata = $8)
            RETURNING 1
            """,
            [
                .text(organization), .text(token), .blob(metadata), SQLValue(now), .text(TokenRecord.State.active.rawValue),
                .text(TokenRecord.State.unlinked.rawValue), SQLValue(expected == nil ? 1 : 0), .blob(expected ?? []),
            ]
        )).isEmpty
    }

    public func deleteUnlinkedTokens(before: Date, limit: Int) async throws(StorageError) -> Int {
        // Neither engine's DELETE takes a LIMIT (SQLite's only when compiled to): the batch is a
        // subquery on the primary key, the longest unlinked first (index on state, updated_at).
        try await write(
            """
            DELETE FROM high_value_tokens WHERE (organization, token) IN
              (SELECT organization, token FROM high_value_tokens WHERE state = $1 AND updated_at < $2
               ORDER BY updated_at, organization, token LIMIT $3)
            RETURNING 1
            """, [.text(TokenRecord.State.unlinked.rawValue), SQLValue(before), SQLValue(max(limit, 0))]
        ).count
    }

    // MARK: Key rotation

    public func tokens(sealedWith keyID: String, limit: Int) async throws(StorageError) -> [TokenRecord] {
        try await tokens(where: "key_id", is: keyID, limit: limit)
    }

    public func resealToken(
        _ token: String, organization: OrganizationID, previousKeyID: String, sealed: SealedPayload
    ) async throws(StorageError) -> Bool {
        // Compare-and-set on key_id: a token another instance re-wrapped meanwhile is left alone.
        let rows = try await write(
            """
            UPDATE high_value_tokens SET key_id = $4, wrap_path = $5, wrapped_key = $6, ciphertext = $7, payload_version = $8
            WHERE organization = $1 AND token = $2 AND key_id = $3 RETURNING 1
            """,
            [
                .text(organization), .text(token), .text(previousKeyID), .text(sealed.keyID), .text(sealed.wrapPath),
                .blob(sealed.wrappedKey), .blob(sealed.ciphertext), SQLValue(sealed.version),
            ])
        return !rows.isEmpty
    }

    public func tokens(fingerprintedWith keyID: String, limit: Int) async throws(StorageError) -> [TokenRecord] {
        try await tokens(where: "fingerprint_key_id", is: keyID, limit: limit)
    }

    public func refingerprintToken(
        _ token: String, organization: OrganizationID, previousKeyID: String, fingerprint: [UInt8], fingerprintKeyID: String
    ) async throws(StorageError) -> Bool {
        // Compare-and-set on fingerprint_key_id. The new fingerprint taken in the organisation is
        // the (organization, fingerprint) unique violation, which the driver reports as .conflict.
        let rows = try await write(
            """
            UPDATE high_value_tokens SET fingerprint = $4, fingerprint_key_id = $5
            WHERE organization = $1 AND token = $2 AND fingerprint_key_id = $3 RETURNING 1
            """,
            [.text(organization), .text(token), .text(previousKeyID), .blob(fingerprint), .text(fingerprintKeyID)])
        return !rows.isEmpty
    }

    /// Up to `limit` tokens whose `column` (a key id column, never caller input) is `keyID`, by
    /// primary key so a job paging through them sees the same order on every driver.
    private func tokens(where column: String, is keyID: String, limit: Int) async throws(StorageError) -> [TokenRecord] {
        try await read(
            "SELECT \(Self.selectToken) FROM high_value_tokens WHERE \(column) = $1 ORDER BY organization, token LIMIT $2",
            [.text(keyID), SQLValue(limit)], as: Self.token)
    }

    static func token(_ values: [SQLValue]) throws(StorageError) -> TokenRecord {
        var row = SQLRowReader(values, columns: tokenColumns, table: "high_value_tokens")
        let organization = try row.organization(0)
        let fingerprint = try row.bytes(2)
        // The token value is not named: it is what a merchant stores instead of the card.
        row.row = "organization \(organization), fingerprint " + Hex.encode(fingerprint.prefix(8)) + "…"
        return TokenRecord(
            organization: organization, token: try row.text(1), fingerprint: fingerprint, fingerprintKeyID: try row.text(3),
            accountKind: try row.choice(4, as: TokenRecord.AccountKind.self), merchantTokenID: try row.optionalText(5),
            state: try row.choice(6, as: TokenRecord.State.self),
            sealed: SealedPayload(
                keyID: try row.text(7), wrapPath: try row.text(8), wrappedKey: try row.bytes(9), ciphertext: try row.bytes(10),
                version: try row.integer(11)),
            createdAt: try row.date(12), updatedAt: try row.date(13), merchantTokenMetadata: try row.optionalBytes(14))
    }
}
