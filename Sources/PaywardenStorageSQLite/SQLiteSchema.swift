import GRDB
import PaywardenStorage
import PaywardenStorageSQL

/// The schema on SQLite: one GRDB migration per entry of ``Schema/migrations`` (the identifiers
/// PostgreSQL records too), its statements ``SchemaDDL``'s in SQLite's types.
enum SQLiteSchema {
    static let types = SchemaDDL.Types(bytes: "BLOB", integer: "INTEGER", flag: "INTEGER", withoutRowID: " WITHOUT ROWID")

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for identifier in Schema.migrations {
            let statements = SchemaDDL.statements(identifier, types)
            precondition(!statements.isEmpty, "no SQLite DDL for migration \(identifier)")
            migrator.registerMigration(identifier) { db in
                for statement in statements { try db.execute(sql: statement) }
            }
        }
        return migrator
    }
}
