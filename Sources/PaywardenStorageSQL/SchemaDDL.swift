import PaywardenStorage

/// The schema once, for every engine: each migration's statements with the column types left as
/// `{bytes}`, `{integer}` (64-bit) and `{flag}` (0 or 1), and `{without_rowid}` where SQLite can
/// store a table by its primary key alone. Times are milliseconds since 1970; every table has the
/// primary key the stores look rows up by.
public enum SchemaDDL {
    /// The types one engine writes for the placeholders.
    public struct Types: Sendable {
        public var bytes: String
        public var integer: String
        public var flag: String
        public var withoutRowID: String
        /// A table of the text elements of a JSON array, as column `value` of the alias:
        /// `{json_elements ARRAY ALIAS}` in a template becomes this with `%array` and `%alias`
        /// replaced (SQLite's `json_each`, the default; PostgreSQL's `json_array_elements_text`).
        public var jsonElements: String

        public init(
            bytes: String, integer: String, flag: String, withoutRowID: String = "", jsonElements: String = "json_each(%array) AS %alias"
        ) {
            self.bytes = bytes
            self.integer = integer
            self.flag = flag
            self.withoutRowID = withoutRowID
            self.jsonElements = jsonElements
        }
    }

    /// The statements of `migration` for an engine with `types`; every migration of
    /// ``Schema/migrations`` has some (a test checks).
    public static func statements(_ migration: String, _ types: Types) -> [String] {
        (templates[migration] ?? []).map { statement in
            let typed = statement.replacingOccurrences(of: "{bytes}", with: types.bytes)
                .replacingOccurrences(of: "{integer}", with: types.integer).replacingOccurrences(of: "{flag}", with: types.flag)
                .replacingOccurrences(of: "{without_rowid}", with: types.withoutRowID)
            return jsonElements(in: typed, types)
        }
    }

    /// Each `{json_elements ARRAY ALIAS}` of `statement` in the engine's words.
    private static func jsonElements(in statement: String, _ types: Types) -> String {
        var text = statement
        while let start = text.range(of: "{json_elements "), let end = text.range(of: "}", range: start.upperBound..<text.endIndex) {
            let words = text[start.upperBound..<end.lowerBound].split(separator: " ")
            guard words.count == 2 else { preconditionFailure("{json_elements ARRAY ALIAS} takes two words: \(statement)") }
            let replacement = types.jsonElements.replacingOccurrences(of: "%array", with: words[0])
                .replacingOccurrences(of: "%alias", with: words[1])
            text.replaceSubrange(start.lowerBound..<end.upperBound, with: replacement)
        }
        return text
    }

    static let templates: [String: [String]] = [
        "0001_replay_ledger_and_vault": [
            """
            CREATE TABLE replay_ledger (
              transaction_id {bytes} PRIMARY KEY,
              expires_at {integer} NOT NULL
            ){without_rowid}
            """,
            "CREATE INDEX replay_ledger_expiry ON replay_ledger (expires_at)",
            """
            CREATE TABLE paypages (
              id TEXT PRIMARY KEY,
              organization TEXT NOT NULL,
              merchant_identifiers TEXT NOT NULL,
              report_groups TEXT NOT NULL,
              token_format TEXT NOT NULL,
              enabled {flag} NOT NULL CHECK (enabled IN (0, 1)),
              created_at {integer} NOT NULL
            )
            """,
            """
            CREATE TABLE registrations (
              lookup_key {bytes} PRIMARY KEY,
              organization TEXT NOT NULL,
              paypage_id TEXT NOT NULL,
              created_at {integer} NOT NULL,
              expires_at {integer} NOT NULL,
              redemptions {integer} NOT NULL DEFAULT 0,
              ended_at {integer},
              key_id TEXT,
              wrap_path TEXT,
              wrapped_key {bytes},
              ciphertext {bytes},
              payload_version {integer},
              CHECK ((key_id IS NULL) = (ciphertext IS NULL))
            )
            """,
            "CREATE INDEX registrations_expiry ON registrations (expires_at)",
            """
            CREATE TABLE high_value_tokens (
              organization TEXT NOT NULL,
              token TEXT NOT NULL,
              fingerprint {bytes} NOT NULL,
              fingerprint_key_id TEXT NOT NULL,
              account_kind TEXT NOT NULL,
              merchant_token_id TEXT,
              state TEXT NOT NULL,
              key_id TEXT NOT NULL,
              wrap_path TEXT NOT NULL,
              wrapped_key {bytes} NOT NULL,
              ciphertext {bytes} NOT NULL,
              payload_version {integer} NOT NULL,
              created_at {integer} NOT NULL,
              updated_at {integer} NOT NULL,
              PRIMARY KEY (organization, token),
              UNIQUE (organization, fingerprint)
            )
            """,
            "CREATE INDEX high_value_tokens_merchant_token ON high_value_tokens (merchant_token_id)",
            """
            CREATE TABLE merchant_token_events (
              id TEXT PRIMARY KEY,
              merchant_identifier TEXT NOT NULL,
              merchant_token_id TEXT NOT NULL,
              kind TEXT NOT NULL,
              state TEXT NOT NULL,
              attempts {integer} NOT NULL,
              last_error TEXT,
              received_at {integer} NOT NULL,
              updated_at {integer} NOT NULL,
              detail {bytes}
            )
            """,
            "CREATE INDEX merchant_token_events_state ON merchant_token_events (state, received_at)",
        ],
        // Key rotation finds rows by the key that sealed or fingerprinted them, and a retired
        // lookup key's dependants by creation time, without scanning the vault.
        "0002_vault_key_indexes": [
            "CREATE INDEX registrations_key ON registrations (key_id)",
            "CREATE INDEX registrations_created ON registrations (created_at)",
            "CREATE INDEX high_value_tokens_key ON high_value_tokens (key_id)",
            "CREATE INDEX high_value_tokens_fingerprint_key ON high_value_tokens (fingerprint_key_id)",
        ],
        // Merchant-token events as the notification route records them: by Apple's event id, before
        // their type and merchant token are fetched, with a retry schedule and the effect applying
        // had. No code wrote the first table, so it is replaced, not altered. Tokens keep the
        // merchant token's latest metadata; unlinked ones are purged by state and age.
        "0003_merchant_token_events": [
            "DROP TABLE merchant_token_events",
            """
            CREATE TABLE merchant_token_events (
              id TEXT PRIMARY KEY,
              merchant_identifier TEXT NOT NULL,
              state TEXT NOT NULL,
              event_type TEXT,
              merchant_token_id TEXT,
              attempts {integer} NOT NULL,
              next_attempt_at {integer} NOT NULL,
              last_error TEXT,
              effect TEXT,
              received_at {integer} NOT NULL,
              updated_at {integer} NOT NULL,
              detail {bytes}
            )
            """,
            "CREATE INDEX merchant_token_events_due ON merchant_token_events (state, next_attempt_at)",
            "CREATE INDEX merchant_token_events_received ON merchant_token_events (received_at)",
            "ALTER TABLE high_value_tokens ADD COLUMN merchant_token_metadata {bytes}",
            "CREATE INDEX high_value_tokens_state ON high_value_tokens (state, updated_at)",
        ],
        // Merchant-key records and certificates, which earlier builds kept as CKO_DATA objects in the
        // token: not every HSM stores data objects (NSS softokn refuses them), and every deployment
        // has this database. Key custody moves a token's old records here on first use.
        "0004_merchant_keys": [
            """
            CREATE TABLE merchant_keys (
              key_id TEXT PRIMARY KEY,
              record {bytes} NOT NULL,
              certificate {bytes},
              revision {integer} NOT NULL,
              updated_at {integer} NOT NULL
            )
            """
        ],
        // Each registration names the HMAC key its look-up was computed with, so a rotated-out key
        // waits for exactly the rows it hashed (an instance that had not yet read the new key may
        // have hashed some after the new key's creation). Rows from before stay NULL and count for
        // every old key until they are purged.
        "0005_vault_bindings": [
            "ALTER TABLE registrations ADD COLUMN lookup_key_id TEXT",
            "CREATE INDEX registrations_lookup_key ON registrations (lookup_key_id)",
        ],
        // Web merchants the platform integrator registered with Apple (their domains a JSON list),
        // and the integrator's domain-verification file, one row (id 1), byte for byte.
        "0006_web_merchants": [
            """
            CREATE TABLE web_merchants (
              id TEXT PRIMARY KEY,
              partner_merchant_name TEXT NOT NULL,
              encrypt_to TEXT NOT NULL,
              merchant_url TEXT,
              domain_names TEXT NOT NULL,
              state TEXT NOT NULL,
              organization TEXT,
              domain_association_sha256 TEXT,
              created_at {integer} NOT NULL,
              updated_at {integer} NOT NULL
            )
            """,
            """
            CREATE TABLE domain_associations (
              id {integer} PRIMARY KEY CHECK (id = 1),
              content {bytes} NOT NULL,
              sha256 TEXT NOT NULL,
              stored_at {integer} NOT NULL
            )
            """,
        ],
        // Merchant-token usage information: the package a merchant published for a token, what the
        // device is served, the hash of its authentication token; and each merchant's HPKE sender key.
        "0007_merchant_token_usage_information": [
            """
            CREATE TABLE usage_information (
              merchant_token_id TEXT PRIMARY KEY,
              merchant_identifier TEXT NOT NULL,
              organization TEXT NOT NULL,
              state TEXT NOT NULL,
              package {bytes} NOT NULL,
              package_response {bytes},
              authentication_token_hash {bytes},
              updated_at {integer} NOT NULL
            )
            """,
            """
            CREATE TABLE usage_information_sender_keys (
              merchant_identifier TEXT PRIMARY KEY,
              custody TEXT NOT NULL,
              hsm_key_id TEXT NOT NULL,
              public_key {bytes} NOT NULL,
              wrapped_seed {bytes},
              wrap_path TEXT,
              created_at {integer} NOT NULL
            )
            """,
        ],
        // Usage information is written by a compare-and-set on the revision its caller read, so a
        // publication never replaces one it did not read (another organisation's, or a newer one).
        "0008_usage_information_revision": [
            "ALTER TABLE usage_information ADD COLUMN revision {integer} NOT NULL DEFAULT 1"
        ],
        // Web merchants change one request at a time (a change holds the row until it finishes or
        // lapses), and a domain belongs to one organisation and one web merchant: its row is the
        // constraint, claimed before Apple is called. Organisations prove a domain with a challenge
        // of their own. Domains registered before are their web merchant's organisation's (the
        // first web merchant's, should two have one).
        "0009_web_merchant_domains": [
            "ALTER TABLE web_merchants ADD COLUMN change_id TEXT",
            "ALTER TABLE web_merchants ADD COLUMN change_until {integer}",
            """
            CREATE TABLE web_merchant_domains (
              domain TEXT PRIMARY KEY,
              organization TEXT NOT NULL,
              merchant_id TEXT,
              proof TEXT NOT NULL,
              proved_at {integer} NOT NULL
            ){without_rowid}
            """,
            "CREATE INDEX web_merchant_domains_merchant ON web_merchant_domains (merchant_id)",
            """
            CREATE TABLE web_merchant_domain_challenges (
              organization TEXT PRIMARY KEY,
              challenge TEXT NOT NULL,
              created_at {integer} NOT NULL
            )
            """,
            """
            INSERT INTO web_merchant_domains (domain, organization, merchant_id, proof, proved_at)
            SELECT d.value, COALESCE(w.organization, ''), w.id, 'registered-before', w.updated_at
            FROM web_merchants w, {json_elements w.domain_names d}
            WHERE w.state = 'active' ORDER BY w.created_at, w.id
            ON CONFLICT (domain) DO NOTHING
            """,
        ],
        // The key each processor upstream's client presents: during a changeover between two
        // configured keys, the one the instances last chose (shown by `keys list`).
        "0010_upstream_client_keys": [
            """
            CREATE TABLE upstream_client_keys (
              upstream TEXT PRIMARY KEY,
              key_id TEXT NOT NULL,
              since {integer} NOT NULL
            )
            """
        ],
    ]
}
