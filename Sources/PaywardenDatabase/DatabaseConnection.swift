import Logging
import PaywardenConfiguration
import PaywardenStorage
import PaywardenStoragePostgres
import PaywardenStorageSQL
import PaywardenStorageSQLite
import ServiceLifecycle

/// The database the settings name, opened, with the services that must run while it is used
/// (PostgreSQL's connection pool; nothing for SQLite or memory).
public struct DatabaseConnection: Sendable {
    public let database: any PaywardenDatabase
    /// The merchant-key records: ``database``, except with `memory:`, where they stay in the
    /// SQLite file under the home (admin commands write them from other processes).
    private let keyRecordDatabase: any PaywardenDatabase
    private let keyRecordsSeparate: Bool
    public let services: [any Service]
    /// `serve`'s shared lock on a SQLite database (``SQLiteServingLock``), held while this lives.
    private let servingLock: SQLiteServingLock?

    public var keyRecords: any KeyRecordStore { keyRecordDatabase }

    public init(
        database: any PaywardenDatabase, keyRecords: (any PaywardenDatabase)? = nil, services: [any Service] = [],
        servingLock: SQLiteServingLock? = nil
    ) {
        self.database = database
        self.keyRecordDatabase = keyRecords ?? database
        self.keyRecordsSeparate = keyRecords != nil
        self.services = services
        self.servingLock = servingLock
    }

    /// Opens the database (SQLite creates its file unless `create` is false); nothing is migrated
    /// or checked here. `serving` is `serve`'s: it says so where `db copy` looks (a shared lock on
    /// a SQLite database, the sessions' `application_name` on PostgreSQL).
    public static func open(
        _ settings: DatabaseSettings, create: Bool = true, serving: Bool = false, logger: Logger
    ) throws(StorageError) -> DatabaseConnection {
        switch settings.location {
        case .memory:
            return DatabaseConnection(
                database: InMemoryDatabase(),
                keyRecords: try SQLiteDriver.open(
                    path: settings.memoryKeyRecordsPath, create: create, busyTimeout: settings.statementTimeout / .seconds(1)))
        case .sqlite(let path):
            var servingLock: SQLiteServingLock?
            if serving {
                servingLock = try SQLiteServingLock.take(.serving, databasePath: path)
                guard servingLock != nil else {
                    throw StorageError(
                        .unavailable,
                        "`paywarden db copy` is reading the database at \(path) (it holds \(SQLiteServingLock.path(for: path))): "
                            + "start serve once the copy has finished")
                }
            }
            return DatabaseConnection(
                database: try SQLiteDriver.open(path: path, create: create, busyTimeout: settings.statementTimeout / .seconds(1)),
                servingLock: servingLock)
        case .postgres(let location):
            let tls: PostgresConnectionSettings.TLSMode =
                switch location.sslMode {
                case .disable: .disable
                case .require: .require
                case .verifyCA: .verifyCA(rootCertificate: location.rootCertificate)
                case .verifyFull: .verifyFull(rootCertificate: location.rootCertificate)
                }
            let database = try PostgresDriver.make(
                PostgresConnectionSettings(
                    host: location.host, port: location.port, username: location.username, password: location.password,
                    database: location.database, tls: tls, maximumConnections: settings.poolSize,
                    statementTimeout: settings.statementTimeout, displayLocation: location.displayURL,
                    applicationName: serving ? PostgresConnectionSettings.servingApplicationName : "paywarden"),
                logger: logger)
            return DatabaseConnection(database: database, services: [database.engine])
        }
    }

    /// Runs `body` with ``services`` running, and stops them afterwards: how an admin command
    /// uses the database.
    public func withServices<R>(_ body: (any PaywardenDatabase) async throws -> R) async throws -> R {
        guard !services.isEmpty else { return try await body(database) }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            for service in services { group.addTask { try await service.run() } }
            defer { group.cancelAll() }
            return try await body(database)
        }
    }

    /// What `serve` does before it listens: refuses a schema newer than this build, and migrates
    /// an older one when `automatically`, else refuses it. Returns the migrations applied.
    public func prepareSchema(migratingAutomatically automatically: Bool) async throws(StorageError) -> [String] {
        // The key records' SQLite file beside a memory: database is migrated as SQLite always is.
        if keyRecordsSeparate { _ = try await Self.prepare(keyRecordDatabase, migratingAutomatically: true) }
        return try await Self.prepare(database, migratingAutomatically: automatically)
    }

    private static func prepare(_ database: any PaywardenDatabase, migratingAutomatically automatically: Bool)
        async throws(StorageError) -> [String]
    {
        let status = try await database.schemaStatus()
        if status.isNewerThanBuild {
            throw StorageError(
                .schema,
                "the \(database.driver) database at \(database.location) was migrated by a newer Paywarden (it has "
                    + "\(status.unknown.joined(separator: ", ")), unknown to this build): run the newer build, or restore a database "
                    + "this one wrote")
        }
        guard !status.pending.isEmpty else { return [] }
        guard automatically else {
            throw StorageError(
                .schema,
                "the \(database.driver) database at \(database.location) has schema version \(status.version) of "
                    + "\(status.latestVersion): run `paywarden db migrate` (or set "
                    + "\(SettingCatalog.databaseAutoMigrate.environmentName)=true)")
        }
        return try await database.migrate()
    }
}
