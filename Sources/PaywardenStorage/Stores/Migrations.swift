/// The schema's versions: the same list, the same tables, on every driver. Forward only: a
/// version once released is never edited, a change is a new version.
public enum Schema {
    /// Every migration, oldest first. The schema version is the number of these applied.
    public static let migrations: [String] = [
        "0001_replay_ledger_and_vault", "0002_vault_key_indexes", "0003_merchant_token_events", "0004_merchant_keys",
        "0005_vault_bindings", "0006_web_merchants", "0007_merchant_token_usage_information", "0008_usage_information_revision",
        "0009_web_merchant_domains", "0010_upstream_client_keys",
    ]

    /// The tables `db status` counts, in the order it prints them.
    public static let tables: [String] = [
        "replay_ledger", "paypages", "registrations", "high_value_tokens", "merchant_token_events", "merchant_keys", "web_merchants",
        "domain_associations", "usage_information", "usage_information_sender_keys", "web_merchant_domains",
        "web_merchant_domain_challenges", "upstream_client_keys",
    ]
}

/// Where a database's schema stands against this build's.
public struct SchemaStatus: Sendable, Hashable {
    /// Migrations of ``Schema/migrations`` applied, in order.
    public var applied: [String]
    /// Migrations recorded in the database that this build does not know: a newer build ran.
    public var unknown: [String]

    public init(applied: [String], unknown: [String]) {
        self.applied = applied
        self.unknown = unknown
    }

    /// The status of a database whose migrations table records `recorded`.
    public init(recorded: Set<String>) {
        self.init(applied: Schema.migrations.filter(recorded.contains), unknown: recorded.subtracting(Schema.migrations).sorted())
    }

    /// Refuses (`.schema`) to migrate a database a newer build migrated.
    public func refuseIfNewerThanBuild() throws(StorageError) {
        guard isNewerThanBuild else { return }
        throw StorageError(.schema, "the database has migrations this build does not know (\(unknown.joined(separator: ", ")))")
    }

    public var version: Int { applied.count }
    public var latestVersion: Int { Schema.migrations.count }
    public var pending: [String] { Schema.migrations.filter { !applied.contains($0) } }
    /// The database was migrated by a newer build: this one must not use it.
    public var isNewerThanBuild: Bool { !unknown.isEmpty }
    public var isCurrent: Bool { pending.isEmpty && unknown.isEmpty }
}

/// Versioned, forward-only schema changes.
public protocol Migrations: Sendable {
    func schemaStatus() async throws(StorageError) -> SchemaStatus
    /// Applies the pending migrations (one at a time across instances); returns those applied.
    /// Refuses (`.schema`) a database newer than this build.
    func migrate() async throws(StorageError) -> [String]
}
