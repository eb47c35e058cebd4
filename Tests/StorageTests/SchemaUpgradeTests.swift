import Foundation
import PaywardenStorage
import PaywardenStorageSQL
import PaywardenStorageSQLite
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// A database an earlier build left at schema version 2, with rows in it, brought to this build's
/// schema by `migrate`, on both engines.
@Suite(.releasesTestResources)
struct SchemaUpgradeTests {
    @Test("SQLite: version 2 with the old events table migrates to the current schema")
    func sqlite() async throws {
        let directory = NSTemporaryDirectory() + "paywarden-sqlite-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: directory)
        let database = try SQLiteDriver.open(path: directory + "/paywarden.sqlite")
        try await SchemaVersion2.plant(
            in: database, types: SchemaDDL.Types(bytes: "BLOB", integer: "INTEGER", flag: "INTEGER", withoutRowID: " WITHOUT ROWID"),
            migrationsTable: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)",
            record: { "INSERT INTO grdb_migrations (identifier) VALUES ('\($0)')" })
        try await SchemaVersion2.checkUpgrade(of: database)
    }

    @Test("PostgreSQL: version 2 with the old events table migrates to the current schema")
    func postgres() async throws {
        try await TestPostgres.shared().withDatabase(migrated: false) { database in
            try await SchemaVersion2.plant(
                in: database, types: SchemaDDL.Types(bytes: "BYTEA", integer: "BIGINT", flag: "SMALLINT"),
                migrationsTable: "CREATE TABLE paywarden_migrations (identifier TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)",
                record: { "INSERT INTO paywarden_migrations (identifier, applied_at) VALUES ('\($0)', 0)" })
            try await SchemaVersion2.checkUpgrade(of: database)
        }
    }
}

/// The schema as version 2 left it, built from the first two migrations' DDL, with a token and
/// an event of the old shape in it.
enum SchemaVersion2 {
    static let migrations = ["0001_replay_ledger_and_vault", "0002_vault_key_indexes"]
    /// Every migration after version 2, in order: what the upgrade applies. Written out, so that a
    /// renamed or reordered migration fails here.
    static let laterMigrations = [
        "0003_merchant_token_events", "0004_merchant_keys", "0005_vault_bindings", "0006_web_merchants",
        "0007_merchant_token_usage_information", "0008_usage_information_revision", "0009_web_merchant_domains",
        "0010_upstream_client_keys",
    ]
    static let t0 = Date(timeIntervalSince1970: 1_795_000_000)

    static let token = TokenRecord(
        organization: "org-a", token: "5204240000001480", fingerprint: Array(repeating: 0x5A, count: 32), fingerprintKeyID: "hmac-1",
        accountKind: .merchantPAN, merchantTokenID: "DNITHE0001",
        sealed: SealedPayload(keyID: "kek-1", wrapPath: "aes-key-wrap-pad", wrappedKey: [1, 2], ciphertext: [3, 4], version: 1),
        createdAt: t0)

    static func plant<Driver: SQLDriver>(
        in database: SQLDatabase<Driver>, types: SchemaDDL.Types, migrationsTable: String, record: (String) -> String
    ) async throws {
        #expect(try await database.schemaStatus().version == 0)
        _ = try await database.engine.execute(migrationsTable, [], writes: true)
        for migration in migrations {
            for statement in SchemaDDL.statements(migration, types) { _ = try await database.engine.execute(statement, [], writes: true) }
            _ = try await database.engine.execute(record(migration), [], writes: true)
        }
        let status = try await database.schemaStatus()
        #expect(
            status.applied == migrations && status.pending == laterMigrations)
        _ = try await database.engine.execute(
            """
            INSERT INTO high_value_tokens (organization, token, fingerprint, fingerprint_key_id, account_kind, merchant_token_id, state,
              key_id, wrap_path, wrapped_key, ciphertext, payload_version, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
            """,
            [
                .text(token.organization), .text(token.token), .blob(token.fingerprint), .text(token.fingerprintKeyID),
                .text(token.accountKind.rawValue), SQLValue(token.merchantTokenID), .text(token.state.rawValue), .text(token.sealed.keyID),
                .text(token.sealed.wrapPath), .blob(token.sealed.wrappedKey), .blob(token.sealed.ciphertext),
                SQLValue(token.sealed.version),
                SQLValue(token.createdAt), SQLValue(token.updatedAt),
            ], writes: true)
        _ = try await database.engine.execute(
            """
            INSERT INTO merchant_token_events (id, merchant_identifier, merchant_token_id, kind, state, attempts, received_at, updated_at)
            VALUES ('old-event', 'merchant.com.example', 'DNITHE0001', 'UNLINK', 'pending', 0, 0, 0)
            """, [], writes: true)
        _ = try await database.engine.execute(
            """
            INSERT INTO registrations (lookup_key, organization, paypage_id, created_at, expires_at, redemptions, key_id, wrap_path,
              wrapped_key, ciphertext, payload_version)
            VALUES ($1, 'org-a', 'pp1', 0, 86400000, 0, 'kek-1', 'aes-key-wrap-pad', $2, $3, 1)
            """, [.blob(registrationKey), .blob([1, 2]), .blob([3, 4])], writes: true)
    }

    /// A registration's look-up key, in the version-2 shape (no look-up key id).
    static let registrationKey = [UInt8](repeating: 0x4C, count: 32)

    static func checkUpgrade<Driver: SQLDriver>(of database: SQLDatabase<Driver>) async throws {
        #expect(try await database.migrate() == laterMigrations)
        #expect(try await database.schemaStatus().isCurrent)
        #expect(try await database.migrate().isEmpty)
        // The tokens are kept, with no metadata yet; the events table is the new one.
        #expect(try await database.token(token.token, organization: "org-a") == token)
        #expect(try await database.event(id: "old-event") == nil)
        let event = MerchantTokenEventRecord(id: "new-event", merchantIdentifier: "merchant.com.example", receivedAt: t0)
        #expect(try await database.recordEvent(event))
        #expect(try await database.dueEvents(at: t0, limit: 10) == [event])
        #expect(try await database.unlinkTokens(merchantTokenID: "DNITHE0001", organization: nil, at: t0 + 1) == 1)
        #expect(
            try await database.replaceMerchantTokenMetadata(
                token.token, organization: "org-a", replacing: nil, with: [0x7B, 0x7D], at: t0 + 2))
        #expect(try await database.deleteUnlinkedTokens(before: t0 + 2, limit: 10) == 1)
        #expect(Set(try await database.rowCounts().map(\.table)) == Set(Schema.tables))
        // The old registration is kept, naming no look-up key: it counts for every old HMAC key.
        let registration = try await database.registration(lookupKey: registrationKey)
        #expect(registration != nil && registration?.lookupKeyID == nil && registration?.sealed?.version == 1)
        #expect(try await database.registrationCount(lookupKeyID: "hmac-1") == 1)
    }
}

/// Web merchants an earlier build registered (schema version 8, their domains a JSON list) give
/// their domains to their organisations when 0009 makes domains a constraint: the first web
/// merchant's, should two have one; none of a deleted one's.
@Suite(.releasesTestResources)
struct WebMerchantDomainUpgradeTests {
    @Test("SQLite: registered domains become their organisations'")
    func sqlite() async throws {
        let directory = NSTemporaryDirectory() + "paywarden-sqlite-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: directory)
        let database = try SQLiteDriver.open(path: directory + "/paywarden.sqlite")
        try await Self.check(
            database, types: SchemaDDL.Types(bytes: "BLOB", integer: "INTEGER", flag: "INTEGER", withoutRowID: " WITHOUT ROWID"),
            migrationsTable: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)",
            record: { "INSERT INTO grdb_migrations (identifier) VALUES ('\($0)')" })
    }

    @Test("PostgreSQL: registered domains become their organisations'")
    func postgres() async throws {
        try await TestPostgres.shared().withDatabase(migrated: false) { database in
            try await Self.check(
                database,
                types: SchemaDDL.Types(
                    bytes: "BYTEA", integer: "BIGINT", flag: "SMALLINT",
                    jsonElements: "json_array_elements_text(%array::json) AS %alias(value)"),
                migrationsTable: "CREATE TABLE paywarden_migrations (identifier TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)",
                record: { "INSERT INTO paywarden_migrations (identifier, applied_at) VALUES ('\($0)', 0)" })
        }
    }

    static func check<Driver: SQLDriver>(
        _ database: SQLDatabase<Driver>, types: SchemaDDL.Types, migrationsTable: String, record: (String) -> String
    ) async throws {
        _ = try await database.engine.execute(migrationsTable, [], writes: true)
        let earlier = Array(Schema.migrations.prefix { $0 != "0009_web_merchant_domains" })
        for migration in earlier {
            for statement in SchemaDDL.statements(migration, types) { _ = try await database.engine.execute(statement, [], writes: true) }
            _ = try await database.engine.execute(record(migration), [], writes: true)
        }
        let rows: [(String, String, String?, String, Int)] = [
            ("older-shop", #"["shop.example.com","shared.example.com"]"#, "org-a", "active", 1000),
            ("newer-shop", #"["shared.example.com","newer.example.com"]"#, "org-b", "active", 2000),
            ("admins-shop", #"["admin.example.com"]"#, nil, "active", 3000),
            ("closed-shop", #"[]"#, "org-c", "deleted", 500),
        ]
        for (id, domains, organization, state, created) in rows {
            _ = try await database.engine.execute(
                """
                INSERT INTO web_merchants (id, partner_merchant_name, encrypt_to, merchant_url, domain_names, state, organization,
                  domain_association_sha256, created_at, updated_at)
                VALUES ($1, 'Shop', 'platformintegrator.com.example', NULL, $2, $3, $4, NULL, $5, $5)
                """, [.text(id), .text(domains), .text(state), SQLValue(organization), SQLValue(created)], writes: true)
        }
        #expect(try await database.migrate() == ["0009_web_merchant_domains", "0010_upstream_client_keys"])
        let held = try await database.allWebMerchantDomains()
        #expect(
            held.map { "\($0.domain) \($0.organization) \($0.merchantID ?? "-") \($0.proof.rawValue)" } == [
                "admin.example.com  admins-shop registered-before", "newer.example.com org-b newer-shop registered-before",
                "shared.example.com org-a older-shop registered-before", "shop.example.com org-a older-shop registered-before",
            ], "\(held)")
        // The web merchants themselves are read as before, and change through the new path.
        #expect(try await database.webMerchant(id: "newer-shop")?.domainNames == ["shared.example.com", "newer.example.com"])
    }
}
