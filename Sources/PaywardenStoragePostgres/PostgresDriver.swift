import Foundation
import Logging
import NIOCore
import NIOSSL
import PaywardenPrimitives
import PaywardenStorage
import PaywardenStorageSQL
import PostgresNIO
import ServiceLifecycle
import Synchronization
import _ConnectionPoolModule

/// PostgreSQL, for several instances sharing one database: a `PostgresClient` connection pool,
/// run as a service-lifecycle service (list it before the services that use it, so it stops
/// after them). Every statement has a deadline, so an unreachable server is answered as
/// `.unavailable` in `statementTimeout` rather than after the pool's minute of retrying.
/// Migrations excepted: they wait for each other and may run long, but not for a table's lock.
public final class PostgresDriver: SQLDriver, Service {
    public let settings: PostgresConnectionSettings
    private let client: PostgresClient
    private let logger: Logger

    public var driver: String { "postgres" }
    public var location: String { settings.displayLocation }

    /// The stores over a new pool; nothing connects until ``run()`` runs.
    public static func make(_ settings: PostgresConnectionSettings, logger: Logger) throws(StorageError) -> SQLDatabase<PostgresDriver> {
        SQLDatabase(try PostgresDriver(settings, logger: logger))
    }

    init(_ settings: PostgresConnectionSettings, logger: Logger) throws(StorageError) {
        self.settings = settings
        self.logger = logger
        var configuration = PostgresClient.Configuration(
            host: settings.host, port: settings.port, username: settings.username, password: settings.password?.revealed,
            database: settings.database, tls: try Self.tls(settings.tls))
        configuration.options.maximumConnections = settings.maximumConnections
        configuration.options.connectTimeout = .seconds(5)
        // The server ends a statement that outlives the client's deadline (and rolls it back).
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", "\(settings.statementTimeout.milliseconds)"), ("application_name", settings.applicationName),
        ]
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    private static func tls(_ mode: PostgresConnectionSettings.TLSMode) throws(StorageError) -> PostgresClient.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        let root: String?
        switch mode {
        case .disable:
            return .disable
        case .require:
            tls.certificateVerification = .none
            return .require(tls)
        case .verifyCA(let rootCertificate):
            tls.certificateVerification = .noHostnameVerification
            root = rootCertificate
        case .verifyFull(let rootCertificate):
            tls.certificateVerification = .fullVerification
            root = rootCertificate
        }
        if let root {
            guard FileManager.default.isReadableFile(atPath: root) else {
                throw StorageError(.unavailable, "the PostgreSQL root certificate \(root) cannot be read")
            }
            tls.trustRoots = .file(root)
        }
        return .require(tls)
    }

    /// Runs the pool until graceful shutdown.
    public func run() async {
        await client.run()
    }

    // MARK: SQLExecutor

    public func execute(_ sql: String, _ binds: [SQLValue], writes: Bool) async throws(StorageError) -> [[SQLValue]] {
        let query = Self.query(sql, binds)
        let client = self.client
        let logger = self.logger
        return try await deadline { () async throws -> [[SQLValue]] in
            try await Self.rows(of: client.query(query, logger: logger))
        }
    }

    /// The steps in one transaction on one connection, committed (durable: PostgreSQL's commit
    /// waits for its log's flush) before this returns.
    public func write(_ steps: [SQLWriteStep]) async throws(StorageError) -> SQLWrite {
        let client = self.client
        let logger = self.logger
        let outcome = try await deadline { () async throws -> SQLWriteOutcome in
            do {
                return try await client.withTransaction(logger: logger) { connection in
                    var results: [[[SQLValue]]?] = []
                    for (index, step) in steps.enumerated() {
                        if step.condition == .previousReturnedNoRows, let previous = results.last, previous?.isEmpty == false {
                            results.append(nil)
                            continue
                        }
                        let rows = try await Self.rows(of: connection.query(Self.query(step.sql, step.binds), logger: logger))
                        // Thrown to roll the transaction back, and caught below as the outcome.
                        if step.requirement == .rows, rows.isEmpty { throw UnmetRequirement(step: index) }
                        results.append(rows)
                    }
                    return .completed(results)
                }
            } catch let error as PostgresTransactionError {
                if let unmet = error.closureError as? UnmetRequirement, error.rollbackError == nil { return .stopped(at: unmet.step) }
                throw error
            }
        }
        return SQLWrite(outcome: outcome, ticket: .durable)
    }

    /// Every write is durable when it is answered.
    public func awaitDurable(_ ticket: CommitTicket) async throws(StorageError) {}

    /// Every statement is a round trip to the server: claims share one (``ReplayClaimBatcher``).
    public var batchesReplayClaims: Bool { true }

    private struct UnmetRequirement: Error {
        let step: Int
    }

    private static func query(_ sql: String, _ binds: [SQLValue]) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: binds.count)
        for bind in binds {
            switch bind {
            case .integer(let integer): bindings.append(integer)
            case .text(let text): bindings.append(text)
            case .blob(let bytes): bindings.append(ByteBuffer(bytes: bytes))
            case .null: bindings.appendNull()
            }
        }
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }

    private static func rows(of sequence: PostgresRowSequence) async throws -> [[SQLValue]] {
        var rows: [[SQLValue]] = []
        for try await row in sequence {
            rows.append(try row.map { cell throws(StorageError) in try SQLValue(cell) })
        }
        return rows
    }

    /// Runs `body` with the statement deadline; every failure becomes a categorised error. The
    /// caller's wait ends at the deadline even when the query cannot be cancelled any more (one
    /// already sent runs to its end; the server's own `statement_timeout` bounds it there). A
    /// claim that commits after its caller was told "unavailable" refuses that token later:
    /// the safe direction. The deadline is one entry in the process's statement sweeper, not a
    /// sleeping task per statement (a timer and a wake-up each, about a tenth of a claim's CPU).
    private func deadline<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws(StorageError) -> T {
        let timeout = settings.statementTimeout
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            let outcome = DeadlineOutcome(continuation)
            outcome.work = Task {
                do {
                    outcome.resolve(.success(try await body()))
                } catch {
                    outcome.resolve(.failure(error))
                }
            }
            Self.statementDeadlines.add(outcome, timeout: timeout)
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw Self.storageError(error)
        }
    }

    /// One timer for every statement's deadline in the process.
    private static let statementDeadlines = DeadlineSweeper()

    // MARK: SQLDriver

    public func schemaStatus() async throws(StorageError) -> SchemaStatus {
        let exists = try await execute("SELECT to_regclass($1)::text", [.text(PostgresSchema.migrationsTable)], writes: false)
        guard case .text? = exists.first?.first else { return SchemaStatus(applied: [], unknown: []) }
        let rows = try await execute("SELECT identifier FROM \(PostgresSchema.migrationsTable)", [], writes: false)
        let recorded = Set(rows.compactMap { if case .text(let identifier)? = $0.first { identifier } else { nil } })
        return SchemaStatus(recorded: recorded)
    }

    public func migrate() async throws(StorageError) -> [String] {
        let logger = self.logger
        let client = self.client
        let lockTimeout = String(settings.statementTimeout.milliseconds)
        return try await deadlineless { () async throws -> [String] in
            try await client.withTransaction(logger: logger) { connection in
                // No statement timeout (DDL on a large table may run long, and the lock below waits
                // out another instance's whole migration). SET LOCAL lasts until this transaction ends:
                // the pooled connection keeps its settings.
                try await connection.query("SET LOCAL statement_timeout = 0", logger: logger)
                try await connection.query("SET LOCAL lock_timeout = 0", logger: logger)
                // One instance migrates at a time; the others wait here, then find nothing pending. The
                // row is read so that a wait ended by an operator (pg_cancel_backend) fails here, as itself.
                _ = try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresSchema.migrationLock))", logger: logger)
                    .collect()
                // A DDL statement queued behind a long transaction (a backup, an idle session) would hold
                // every query on its table behind it: it gives up after the usual timeout instead, and
                // the whole migration is rolled back.
                try await connection.query("SET LOCAL lock_timeout = \(unescaped: lockTimeout)", logger: logger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS \(unescaped: PostgresSchema.migrationsTable)
                      (identifier TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)
                    """, logger: logger)
                var recorded: Set<String> = []
                for try await identifier in try await connection.query(
                    "SELECT identifier FROM \(unescaped: PostgresSchema.migrationsTable)", logger: logger
                ).decode(String.self) {
                    recorded.insert(identifier)
                }
                let status = SchemaStatus(recorded: recorded)
                try status.refuseIfNewerThanBuild()
                let pending = status.pending
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                for identifier in pending {
                    for statement in SchemaDDL.statements(identifier, PostgresSchema.types) {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        "INSERT INTO \(unescaped: PostgresSchema.migrationsTable) (identifier, applied_at) VALUES (\(identifier), \(now))",
                        logger: logger)
                }
                return pending
            }
        }
    }

    /// Migrations may take longer than a statement's deadline (and wait for another instance's).
    private func deadlineless<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws(StorageError) -> T {
        do {
            return try await body()
        } catch {
            throw Self.storageError(error)
        }
    }

    public func existingTables(_ names: [String]) async throws(StorageError) -> Set<String> {
        let rows = try await execute(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()", [], writes: false)
        return Set(rows.compactMap { if case .text(let name)? = $0.first { name } else { nil } }).intersection(names)
    }

    public func tableNames() async throws(StorageError) -> Set<String> {
        let rows = try await execute(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
            [], writes: false)
        return Set(rows.compactMap { if case .text(let name)? = $0.first { name } else { nil } }).subtracting([
            PostgresSchema.migrationsTable
        ])
    }

    public func layout(of table: String) async throws(StorageError) -> SQLTableLayout {
        let rows = try await execute(
            """
            SELECT c.column_name::text, c.data_type::text, c.is_nullable::text, COALESCE(k.ordinal_position, 0)::bigint
            FROM information_schema.columns c
            LEFT JOIN information_schema.table_constraints t
              ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.constraint_type = 'PRIMARY KEY'
            LEFT JOIN information_schema.key_column_usage k
              ON k.constraint_schema = t.constraint_schema AND k.constraint_name = t.constraint_name AND k.column_name = c.column_name
            WHERE c.table_schema = current_schema() AND c.table_name = $1
            ORDER BY c.ordinal_position
            """, [.text(table)], writes: false)
        guard !rows.isEmpty else { throw StorageError(.schema, "there is no such table", table: table) }
        var columns: [SQLTableLayout.Column] = []
        var key: [(position: Int64, name: String)] = []
        for row in rows {
            guard row.count == 4, case .text(let name) = row[0], case .text(let type) = row[1], case .text(let nullable) = row[2],
                case .integer(let position) = row[3]
            else { throw StorageError(.corrupt, "its declaration cannot be read", table: table) }
            columns.append(SQLTableLayout.Column(name: name, isText: type == "text", isNullable: nullable == "YES"))
            if position > 0 { key.append((position, name)) }
        }
        return SQLTableLayout(table: table, columns: columns, primaryKey: key.sorted { $0.position < $1.position }.map(\.name))
    }

    /// The "C" collation compares text byte for byte, as SQLite's BINARY does; the default one
    /// follows the cluster's locale.
    public func byteOrdered(_ column: SQLTableLayout.Column) -> String {
        column.isText ? "\(column.name) COLLATE \"C\"" : column.name
    }

    /// How many other sessions on this database gave `applicationName` when they connected.
    public func sessions(applicationName: String) async throws(StorageError) -> Int {
        let rows = try await execute(
            """
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()
            """, [.text(applicationName)], writes: false)
        guard case .integer(let count)? = rows.first?.first else { return 0 }
        return Int(count)
    }

    // MARK: Errors

    static func storageError(_ error: any Error) -> StorageError {
        switch error {
        case let error as StorageError:
            return error
        case let error as PostgresTransactionError:
            let inner = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
            return inner.map(storageError) ?? StorageError(.unavailable, "PostgreSQL: the transaction failed")
        case let error as PSQLError:
            return storageError(error)
        case let error as ConnectionPoolError:
            return StorageError(.unavailable, "PostgreSQL cannot be reached (\(error))")
        case is CancellationError:
            return StorageError(.unavailable, "the database operation was cancelled")
        default:
            return StorageError(.unavailable, "PostgreSQL: \(error)")
        }
    }

    private static func storageError(_ error: PSQLError) -> StorageError {
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else {
            // Connection-level: refused, closed, TLS, authentication… the server is not usable now.
            return StorageError(.unavailable, "PostgreSQL cannot be reached (\(error.code))")
        }
        var message = "PostgreSQL error \(state): \(error.serverInfo?[.message] ?? "no message")"
        if state == "55P03" {
            // Only a migration waits for a lock with a limit; the operator can find what it waited for.
            message +=
                " (another session's transaction holds a table this needs, see pg_stat_activity;"
                + " rolled back, run it again once that ends)"
        }
        let table = error.serverInfo?[.tableName]
        switch state.prefix(2) {
        case "23": return StorageError(.conflict, message, table: table)
        case "42", "22", "XX": return StorageError(.corrupt, message, table: table)
        default: return StorageError(.unavailable, message, table: table)  // 08, 53, 57, 40…: try again later
        }
    }
}

extension SQLValue {
    init(_ cell: PostgresCell) throws(StorageError) {
        guard cell.bytes != nil else {
            self = .null
            return
        }
        do {
            switch cell.dataType {
            case .int2: self = .integer(Int64(try cell.decode(Int16.self)))
            case .int4: self = .integer(Int64(try cell.decode(Int32.self)))
            case .int8: self = .integer(try cell.decode(Int64.self))
            case .bool: self = .integer(try cell.decode(Bool.self) ? 1 : 0)
            case .bytea: self = .blob([UInt8](try cell.decode(ByteBuffer.self).readableBytesView))
            case .text, .varchar, .name, .bpchar: self = .text(try cell.decode(String.self))
            default:
                throw StorageError(.corrupt, "column \(cell.columnName) has type \(cell.dataType), which no Paywarden table uses")
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.corrupt, "column \(cell.columnName) cannot be read as \(cell.dataType)")
        }
    }
}

/// The first of the query and its deadline to finish resumes the caller; the other is ignored.
private final class DeadlineOutcome<T: Sendable>: ExpiringRun, Sendable {
    private let state: Mutex<(continuation: CheckedContinuation<Result<T, any Error>, Never>?, work: Task<Void, Never>?)>
    init(_ continuation: CheckedContinuation<Result<T, any Error>, Never>) {
        state = Mutex((continuation, nil))
    }

    /// The query's task, cancelled when the deadline comes first.
    var work: Task<Void, Never>? {
        get { state.withLock { $0.work } }
        set { state.withLock { $0.work = newValue } }
    }

    var isFinished: Bool { state.withLock { $0.continuation == nil } }

    func timeOut(after timeout: Duration) {
        if resolve(.failure(StorageError(.unavailable, "PostgreSQL did not answer within \(timeout.milliseconds) ms"))) {
            work?.cancel()
        }
    }

    /// Resumes the caller unless it was resumed; true when this call did.
    @discardableResult
    func resolve(_ result: Result<T, any Error>) -> Bool {
        let continuation = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        guard let continuation else { return false }
        continuation.resume(returning: result)
        return true
    }
}

extension Duration {
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
