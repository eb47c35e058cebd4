import PaywardenStorage
import PaywardenStorageSQL

/// The schema on PostgreSQL: ``SchemaDDL`` in PostgreSQL's types (BYTEA, BIGINT milliseconds,
/// SMALLINT flags). Applied migrations are recorded in `paywarden_migrations`.
enum PostgresSchema {
    static let migrationsTable = "paywarden_migrations"
    /// Serialises migrations across instances (`pg_advisory_xact_lock`); any constant of ours.
    static let migrationLock: Int64 = 0x5057_4D49_4752  // "PWMIGR"

    static let types = SchemaDDL.Types(
        bytes: "BYTEA", integer: "BIGINT", flag: "SMALLINT", jsonElements: "json_array_elements_text(%array::json) AS %alias(value)")
}
