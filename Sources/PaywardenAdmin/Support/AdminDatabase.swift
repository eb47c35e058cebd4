import Logging
import PaywardenConfiguration
import PaywardenDatabase
import PaywardenServices

/// The database as an admin command uses it: opened (SQLite's file created), its schema checked and
/// migrated as `serve` would (PostgreSQL only when allowed), with PostgreSQL's pool running while
/// `body` does. Merchant-key records live there, so every key command goes through it.
enum AdminDatabase {
    static func with<R>(_ settings: PaywardenSettings, _ body: (DatabaseConnection) async throws -> R) async throws -> R {
        let connection = try DatabaseConnection.open(settings.database, create: true, logger: Logger(label: "paywarden"))
        return try await connection.withServices { _ in
            _ = try await connection.prepareSchema(migratingAutomatically: settings.database.autoMigrate)
            return try await body(connection)
        }
    }
}
