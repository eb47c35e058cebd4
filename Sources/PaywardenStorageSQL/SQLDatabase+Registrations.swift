import Foundation
import PaywardenPrimitives
import PaywardenStorage

extension SQLDatabase: RegistrationStore {
    static var registrationColumns: [String] {
        [
            "lookup_key", "organization", "paypage_id", "created_at", "expires_at", "redemptions", "ended_at", "key_id", "wrap_path",
            "wrapped_key", "ciphertext", "payload_version", "lookup_key_id",
        ]
    }
    private static var selectRegistration: String { registrationColumns.joined(separator: ", ") }
    /// What ending a registration clears: the sealed payload, all of it.
    private static var clearedPayload: String {
        "key_id = NULL, wrap_path = NULL, wrapped_key = NULL, ciphertext = NULL, payload_version = NULL"
    }

    public func insertRegistration(_ record: RegistrationRecord) async throws(StorageError) {
        _ = try await write(
            """
            INSERT INTO registrations (\(Self.selectRegistration))
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            """, Self.registrationValues(record))
    }

    public func insertRegistration(_ record: RegistrationRecord, claiming claim: ReplayClaimRequest) async throws(StorageError) -> Bool {
        let outcome = try await engine.writeDurably([
            Self.claimStep(claim.transactionID, until: claim.expiry, now: claim.now),
            SQLWriteStep(
                """
                INSERT INTO registrations (\(Self.selectRegistration))
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                """, Self.registrationValues(record)),
        ])
        if case .stopped = outcome { return false }
        return true
    }

    public func replaceRegistration(_ record: RegistrationRecord) async throws(StorageError) {
        // One statement, so two replacements racing leave one whole row (SQLite 3.24 and PostgreSQL 9.5 upsert).
        let updated = Self.registrationColumns.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        _ = try await write(
            """
            INSERT INTO registrations (\(Self.selectRegistration))
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            ON CONFLICT (lookup_key) DO UPDATE SET \(updated)
            """, Self.registrationValues(record))
    }

    /// A row's values in ``registrationColumns``' order.
    private static func registrationValues(_ record: RegistrationRecord) -> [SQLValue] {
        let sealed = record.sealed
        return [
            .blob(record.lookupKey), .text(record.organization), .text(record.paypageID), SQLValue(record.createdAt),
            SQLValue(record.expiresAt), SQLValue(record.redemptions), SQLValue(record.endedAt), SQLValue(sealed?.keyID),
            SQLValue(sealed?.wrapPath), SQLValue(sealed?.wrappedKey), SQLValue(sealed?.ciphertext),
            sealed.map { SQLValue($0.version) } ?? .null, SQLValue(record.lookupKeyID),
        ]
    }

    public func registration(lookupKey: [UInt8]) async throws(StorageError) -> RegistrationRecord? {
        let rows = try await read("SELECT \(Self.selectRegistration) FROM registrations WHERE lookup_key = $1", [.blob(lookupKey)])
        return try rows.first.map { row throws(StorageError) in try Self.registration(row) }
    }

    public func recordRedemption(lookupKey: [UInt8], now: Date) async throws(StorageError) -> RegistrationRecord? {
        let rows = try await write(
            """
            UPDATE registrations SET redemptions = redemptions + 1
            WHERE lookup_key = $1 AND ciphertext IS NOT NULL AND expires_at > $2
            RETURNING \(Self.selectRegistration)
            """, [.blob(lookupKey), SQLValue(now)])
        if let row = rows.first { return try Self.registration(row) }
        return try await registration(lookupKey: lookupKey)
    }

    public func recordRedemption(
        lookupKey: [UInt8], now: Date, issuing token: TokenRecord
    ) async throws(StorageError) -> RedemptionWrite {
        let outcome = try await engine.writeDurably(
            [
                SQLWriteStep(
                    """
                    UPDATE registrations SET redemptions = redemptions + 1
                    WHERE lookup_key = $1 AND ciphertext IS NOT NULL AND expires_at > $2
                    RETURNING \(Self.selectRegistration)
                    """, [.blob(lookupKey), SQLValue(now)], requiring: .rows)
            ] + Self.tokenInsertionSteps(token))
        guard let counted = outcome.rows(0)?.first else {
            // Not live, or unknown: the row as it stands, nothing written.
            return RedemptionWrite(registration: try await registration(lookupKey: lookupKey), token: nil)
        }
        return RedemptionWrite(
            registration: try Self.registration(counted),
            token: try Self.tokenInsertion(token, inserted: outcome.rows(1), existing: outcome.rows(2)))
    }

    public func takeRegistration(lookupKey: [UInt8], ciphertext: [UInt8], now: Date) async throws(StorageError) -> RegistrationRecord? {
        // Compare-and-set on the ciphertext read: a payload that replaced it is not taken for it.
        let rows = try await write(
            """
            UPDATE registrations SET redemptions = redemptions + 1, \(Self.clearedPayload), ended_at = $2
            WHERE lookup_key = $1 AND ciphertext = $3 AND expires_at > $2
            RETURNING \(Self.selectRegistration)
            """, [.blob(lookupKey), SQLValue(now), .blob(ciphertext)])
        return try rows.first.map { row throws(StorageError) in try Self.registration(row) }
    }

    public func endRegistration(lookupKey: [UInt8], ciphertext: [UInt8], at now: Date) async throws(StorageError) -> Bool {
        let rows = try await write(
            """
            UPDATE registrations SET \(Self.clearedPayload), ended_at = $2
            WHERE lookup_key = $1 AND ciphertext = $3 RETURNING 1
            """, [.blob(lookupKey), SQLValue(now), .blob(ciphertext)])
        return !rows.isEmpty
    }

    public func purgeRegistrations(now: Date, tombstonesEndedBefore: Date) async throws(StorageError) -> RegistrationPurge {
        let destroyed = try await write(
            """
            UPDATE registrations SET \(Self.clearedPayload), ended_at = $1
            WHERE ciphertext IS NOT NULL AND expires_at <= $1 RETURNING 1
            """, [SQLValue(now)])
        let deleted = try await write(
            "DELETE FROM registrations WHERE ciphertext IS NULL AND ended_at < $1 RETURNING 1", [SQLValue(tombstonesEndedBefore)])
        return RegistrationPurge(payloadsDestroyed: destroyed.count, tombstonesDeleted: deleted.count)
    }

    // MARK: Key rotation

    public func registrations(sealedWith keyID: String, limit: Int) async throws(StorageError) -> [RegistrationRecord] {
        // A tombstone's key_id is NULL, so ended registrations never match.
        try await read(
            "SELECT \(Self.selectRegistration) FROM registrations WHERE key_id = $1 ORDER BY lookup_key LIMIT $2",
            [.text(keyID), SQLValue(limit)], as: Self.registration)
    }

    public func resealRegistration(
        lookupKey: [UInt8], previousKeyID: String, sealed: SealedPayload
    ) async throws(StorageError) -> Bool {
        // Compare-and-set on key_id: a row ended (key_id NULL) or re-wrapped by another instance
        // meanwhile no longer matches, so its payload is neither revived nor overwritten.
        let rows = try await write(
            """
            UPDATE registrations SET key_id = $3, wrap_path = $4, wrapped_key = $5, ciphertext = $6, payload_version = $7
            WHERE lookup_key = $1 AND key_id = $2 RETURNING 1
            """,
            [
                .blob(lookupKey), .text(previousKeyID), .text(sealed.keyID), .text(sealed.wrapPath), .blob(sealed.wrappedKey),
                .blob(sealed.ciphertext), SQLValue(sealed.version),
            ])
        return !rows.isEmpty
    }

    public func registrationCount(lookupKeyID keyID: String) async throws(StorageError) -> Int {
        let rows = try await read(
            "SELECT count(*) FROM registrations WHERE lookup_key_id = $1 OR lookup_key_id IS NULL", [.text(keyID)])
        return try SQLRowReader(rows.first ?? [], columns: ["count"], table: "registrations").integer(0)
    }

    static func registration(_ values: [SQLValue]) throws(StorageError) -> RegistrationRecord {
        var row = SQLRowReader(values, columns: registrationColumns, table: "registrations")
        let lookupKey = try row.bytes(0)
        row.row = "lookup key " + Hex.encode(lookupKey.prefix(8)) + "…"
        var sealed: SealedPayload?
        if let keyID = try row.optionalText(7) {
            sealed = SealedPayload(
                keyID: keyID, wrapPath: try row.text(8), wrappedKey: try row.bytes(9), ciphertext: try row.bytes(10),
                version: try row.integer(11))
        }
        return RegistrationRecord(
            lookupKey: lookupKey, lookupKeyID: try row.optionalText(12), organization: try row.organization(1), paypageID: try row.text(2),
            createdAt: try row.date(3),
            expiresAt: try row.date(4), redemptions: try row.integer(5), sealed: sealed, endedAt: try row.optionalDate(6))
    }
}
