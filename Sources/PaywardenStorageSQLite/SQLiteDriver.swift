import Foundation
import GRDB
import PaywardenStorage
import PaywardenStorageSQL
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The embedded database: one SQLite file (0600, in a 0700 directory when it creates one) in WAL
/// mode; readers run beside the one writer, an acknowledged write survives a crash of the process
/// and a power loss.
///
/// Writes go through ``SQLiteWriter``: each caller runs its statements on its own thread in the
/// transaction open on the writer connection, and a syncer commits it and syncs the log with
/// `fdatasync` outside the write lock, before anyone relying on the write is answered. The writer
/// connection is therefore set to `synchronous=NORMAL` (its commits write the log without
/// syncing it; its checkpoints, which it never runs, would sync), where a commit with FULL held
/// the write lock through its sync and every write waited for a sync it could not share.
public final class SQLiteDriver: SQLDriver {
    public let path: String
    private let pool: DatabasePool
    /// A connection of its own for checkpoints, so copying the log into the database (and its
    /// fsync) never runs inside a write; see ``performMaintenance()``.
    private let checkpointer: DatabaseQueue
    private let log: WriteAheadLogFile
    private let writer: SQLiteWriter
    /// The log's size beyond which a checkpoint holds the writer to start the log over.
    let logSizeBound: Int

    public var driver: String { "sqlite" }
    public var location: String { path }

    /// Opens the database at `path`, creating it when missing unless `create` is false (status
    /// commands must not leave a file behind). Nothing is migrated here. Reads run on their
    /// callers' threads, an event loop per core: `readers` is at least one more than the cores,
    /// so a loop never waits for a reader connection.
    /// - Parameter logSizeBound: see ``performMaintenance()``; 64 MiB by default.
    public static func open(
        path: String, create: Bool = true, busyTimeout: TimeInterval = 5,
        readers: Int = max(4, ProcessInfo.processInfo.activeProcessorCount + 1), logSizeBound: Int = 64 << 20
    ) throws(StorageError) -> SQLDatabase<SQLiteDriver> {
        if !create, !FileManager.default.fileExists(atPath: path) {
            throw StorageError(.unavailable, "there is no database at \(path) yet (serve or `paywarden db migrate` creates it)")
        }
        return SQLDatabase(try SQLiteDriver(path: path, busyTimeout: busyTimeout, readers: readers, logSizeBound: logSizeBound))
    }

    /// - Parameter syncLog: how the log is synced; tests put a gate or a failure in its way.
    init(
        path: String, busyTimeout: TimeInterval, readers: Int, logSizeBound: Int,
        syncLog: (@Sendable (WriteAheadLogFile) -> String?)? = nil
    ) throws(StorageError) {
        self.path = path
        self.logSizeBound = logSizeBound
        try Self.prepareFile(at: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.maximumReaderCount = readers
        configuration.label = "paywarden"
        // The writer's transaction stays open between writes: the syncer commits it.
        configuration.allowsUnsafeTransactions = true
        // No checkpoint inside a commit: the automatic one ran in the writer and stalled every
        // claim behind its fsync (load test p99 153 ms on SQLite against 10 ms in memory).
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = 0") }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // On the writer (GRDB sets NORMAL there with WAL; said again so it cannot drift):
            // commits write the log and SQLiteWriter syncs it. A busy timeout of zero: a caller
            // never waits for another process's lock on its own thread. The log, once started
            // over, keeps at most the bound's size on disk.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                try db.execute(sql: "PRAGMA busy_timeout = 0")
                try db.execute(sql: "PRAGMA journal_size_limit = \(logSizeBound)")
            }
            var checkpointing = Configuration()
            checkpointing.busyMode = .timeout(busyTimeout)
            checkpointing.label = "paywarden-checkpoint"
            checkpointer = try DatabaseQueue(path: path, configuration: checkpointing)
        } catch {
            throw Self.storageError(error, opening: path)
        }
        let log = try WriteAheadLogFile(path: path + "-wal")
        self.log = log
        let checkpointer = self.checkpointer
        let sync = syncLog ?? { $0.sync() }
        writer = SQLiteWriter(
            pool: pool, busyTimeout: .milliseconds(Int64(busyTimeout * 1000)), syncLog: { sync(log) },
            checkpoint: {
                // Nothing commits meanwhile, so a passive checkpoint copies every frame unless a
                // reader's older snapshot holds some back (then it is tried again at the next commit).
                (try? checkpointer.writeWithoutTransaction { db in try db.checkpoint(.passive) })
                    .map { $0.walFrameCount == $0.checkpointedFrameCount } ?? false
            },
            logOutgrown: { log.size > logSizeBound })
    }

    /// The file is created owner-only before SQLite sees it (SQLite gives `-wal` and `-shm` the
    /// main file's mode), and an existing one is made owner-only: the database holds the vault.
    private static func prepareFile(at path: String) throws(StorageError) {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw StorageError(.unavailable, "cannot create the database directory \(directory): \(error.localizedDescription)")
            }
        }
        let descriptor = Glibc.open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StorageError(.unavailable, "cannot open the database file \(path): \(String(cString: strerror(errno)))")
        }
        fchmod(descriptor, 0o600)
        close(descriptor)
    }

    // MARK: SQLExecutor

    /// Reads run on the calling thread, on a reader connection of the pool: no hop to a database
    /// thread and back for a statement of microseconds. Writes run on the calling thread too, on
    /// the writer connection (``SQLiteWriter``), and are answered once durable.
    public func execute(_ sql: String, _ binds: [SQLValue], writes: Bool) async throws(StorageError) -> [[SQLValue]] {
        if writes { return try await writeDurably([SQLWriteStep(sql, binds)]).rows(0) ?? [] }
        return try read(Self.numberedParameters(sql), StatementArguments(binds.map(\.databaseValue)))
    }

    public func write(_ steps: [SQLWriteStep]) async throws(StorageError) -> SQLWrite {
        try await writer.write(steps)
    }

    public func awaitDurable(_ ticket: CommitTicket) async throws(StorageError) {
        try await writer.awaitDurable(ticket)
    }

    /// Not async, so that GRDB's blocking read is the one called: on this thread, no hop.
    private func read(_ sql: String, _ arguments: StatementArguments) throws(StorageError) -> [[SQLValue]] {
        do {
            // One statement is atomic on its own (SQLite reads it from one snapshot of the log), so
            // it needs no transaction around it: GRDB's isolated read added a BEGIN and a COMMIT,
            // with their savepoint bookkeeping, to every look-up.
            return try pool.unsafeRead { db in try SQLiteWriter.rows(sql, arguments, db) }
        } catch {
            throw Self.storageError(error)
        }
    }

    /// What the writer did since the database was opened.
    public var writeStatistics: SQLiteWriteStatistics {
        let counts = writer.statistics
        return SQLiteWriteStatistics(
            writes: counts.writes.load(ordering: .relaxed), batches: counts.batches.load(ordering: .relaxed),
            syncs: counts.syncs.load(ordering: .relaxed), durableWithoutWaiting: counts.durableWithoutWaiting.load(ordering: .relaxed),
            durabilityWaits: counts.durabilityWaits.load(ordering: .relaxed), lockWaits: counts.lockWaits.load(ordering: .relaxed),
            heldCheckpoints: counts.heldCheckpoints.load(ordering: .relaxed), logSize: log.size)
    }

    /// The shared SQL's `$n` as SQLite's `?n`: SQLite reads `$n` as a name and numbers names in
    /// order of appearance, so `SET a = $2 WHERE b = $1` would bind them the wrong way round.
    static func numberedParameters(_ sql: String) -> String {
        if let cached = translations.withLock({ $0[sql] }) { return cached }
        var translated = ""
        translated.reserveCapacity(sql.utf8.count)
        var previous: Character = " "
        for character in sql {
            if previous == "$", character.isNumber {
                translated.removeLast()
                translated.append("?")
            }
            translated.append(character)
            previous = character
        }
        translations.withLock { $0[sql] = translated }
        return translated
    }

    /// The statements are a fixed set, so this stays small.
    private static let translations = Mutex<[String: String]>([:])

    // MARK: SQLDriver

    public func schemaStatus() async throws(StorageError) -> SchemaStatus {
        let migrator = SQLiteSchema.migrator
        let recorded: Set<String>
        do {
            recorded = try await pool.read { db in try migrator.appliedIdentifiers(db) }
        } catch {
            throw Self.storageError(error)
        }
        return SchemaStatus(recorded: recorded)
    }

    public func migrate() async throws(StorageError) -> [String] {
        // GRDB's migrator reads what was applied outside its IMMEDIATE transactions, so two
        // processes migrating at once could both apply a migration. An exclusive lock on a file
        // beside the database serialises them (SQLite's users are always on one machine).
        let lock = try MigrationLock(path: path + ".migrate-lock")
        defer { lock.release() }
        let before = try await schemaStatus()
        try before.refuseIfNewerThanBuild()
        guard !before.pending.isEmpty else { return [] }
        let migrator = SQLiteSchema.migrator
        let pool = self.pool
        let result: Result<Void, any Error> = await withCheckedContinuation { continuation in
            migrator.asyncMigrate(pool) { outcome in continuation.resume(returning: outcome.map { _ in () }) }
        }
        if case .failure(let error) = result { throw Self.storageError(error) }
        let after = try await schemaStatus()
        return after.applied.filter { !before.applied.contains($0) }
    }

    /// A passive checkpoint, every second: copies what the log holds into the database without
    /// waiting for, or blocking, the writer and the readers. Under a load that never pauses it
    /// never quite catches up (commits land while it copies), and SQLite starts the log over only
    /// once all of it is in the database: once the log has outgrown ``logSizeBound`` (the syncer
    /// looks after each batch), the next commit copies the rest while holding the writer (what
    /// accumulated since the last copy), and the next transaction writes the log from its start
    /// (cut to the bound). One that could not copy everything is tried again at the next commit.
    public func performMaintenance() async {
        log.checkIdentity()
        _ = try? await checkpointer.writeWithoutTransaction { db in try db.checkpoint(.passive) }
    }

    public func existingTables(_ names: [String]) async throws(StorageError) -> Set<String> {
        let rows = try await execute("SELECT name FROM sqlite_master WHERE type = 'table'", [], writes: false)
        return Set(rows.compactMap { if case .text(let name)? = $0.first { name } else { nil } }).intersection(names)
    }

    /// Copies the database into a new file at `path` (0600) while others read and write it:
    /// SQLite's online backup, from a reader connection, so it copies one consistent snapshot of
    /// what was committed and (in WAL mode) holds no writer back. The copy is one self-contained
    /// file (rollback journal), checked by `quick_check` and synced. Refuses an existing file, and
    /// removes its own on failure.
    public func backup(to path: String) throws(StorageError) {
        let descriptor = Glibc.open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let failure = errno
            if failure == EEXIST { throw StorageError(.conflict, "\(path) exists: name a new file (a backup never overwrites)") }
            throw StorageError(.unavailable, "cannot create \(path): \(String(cString: strerror(failure)))")
        }
        close(descriptor)
        do {
            let destination = try DatabaseQueue(path: path)
            try pool.backup(to: destination)
            let check = try destination.writeWithoutTransaction { db -> String? in
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
                return try String.fetchOne(db, sql: "PRAGMA quick_check")
            }
            try destination.close()
            guard check == "ok" else { throw StorageError(.corrupt, "the backup at \(path) fails SQLite's quick_check: \(check ?? "?")") }
            let written = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            if written >= 0 {
                fsync(written)
                close(written)
            }
        } catch {
            unlink(path)
            unlink(path + "-journal")
            throw Self.storageError(error)
        }
    }

    public func tableNames() async throws(StorageError) -> Set<String> {
        let rows = try await execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'grdb_migrations'", [],
            writes: false)
        return Set(rows.compactMap { if case .text(let name)? = $0.first { name } else { nil } })
    }

    public func layout(of table: String) async throws(StorageError) -> SQLTableLayout {
        let rows = try await execute("SELECT name, type, \"notnull\", pk FROM pragma_table_info($1)", [.text(table)], writes: false)
        guard !rows.isEmpty else { throw StorageError(.schema, "there is no such table", table: table) }
        var columns: [SQLTableLayout.Column] = []
        var key: [(position: Int64, name: String)] = []
        for row in rows {
            guard row.count == 4, case .text(let name) = row[0], case .text(let type) = row[1], case .integer(let notNull) = row[2],
                case .integer(let position) = row[3]
            else { throw StorageError(.corrupt, "its declaration cannot be read", table: table) }
            columns.append(SQLTableLayout.Column(name: name, isText: type.uppercased() == "TEXT", isNullable: notNull == 0))
            if position > 0 { key.append((position, name)) }
        }
        return SQLTableLayout(table: table, columns: columns, primaryKey: key.sorted { $0.position < $1.position }.map(\.name))
    }

    /// SQLite's default collation, BINARY, compares text byte for byte.
    public func byteOrdered(_ column: SQLTableLayout.Column) -> String { column.name }

    // MARK: Errors

    static func storageError(_ error: any Error, opening path: String? = nil) -> StorageError {
        if let error = error as? StorageError { return error }
        if error is CancellationError { return StorageError(.unavailable, "the database operation was cancelled") }
        guard let error = error as? DatabaseError else { return StorageError(.unavailable, "SQLite: \(error)") }
        let what = path.map { "\($0): " } ?? ""
        let message = "\(what)SQLite error \(error.extendedResultCode.rawValue): \(error.message ?? "no message")"
        switch error.resultCode {
        case .SQLITE_CONSTRAINT:
            return StorageError(.conflict, message)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_SCHEMA, .SQLITE_MISMATCH, .SQLITE_ERROR, .SQLITE_RANGE, .SQLITE_FORMAT:
            return StorageError(.corrupt, message + (path == nil ? "" : "; is this a Paywarden database?"))
        default:
            // BUSY, LOCKED, IOERR, FULL, CANTOPEN, READONLY, PERM, NOMEM…: the database cannot serve now.
            return StorageError(.unavailable, message)
        }
    }
}

/// An exclusive `flock` on a file (0600), held while migrating.
private struct MigrationLock {
    let descriptor: Int32

    init(path: String) throws(StorageError) {
        descriptor = Glibc.open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StorageError(.unavailable, "cannot open the migration lock \(path): \(String(cString: strerror(errno)))")
        }
        // Blocks this thread while another process migrates: start-up and `db migrate` only.
        guard flock(descriptor, LOCK_EX) == 0 else {
            close(descriptor)
            throw StorageError(.unavailable, "cannot lock \(path): \(String(cString: strerror(errno)))")
        }
    }

    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

extension SQLValue {
    init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: self = .null
        case .int64(let integer): self = .integer(integer)
        case .double(let double): self = .text(String(double))
        case .string(let text): self = .text(text)
        case .blob(let data): self = .blob([UInt8](data))
        }
    }

    var databaseValue: DatabaseValue {
        switch self {
        case .integer(let integer): integer.databaseValue
        case .text(let text): text.databaseValue
        case .blob(let bytes): Data(bytes).databaseValue
        case .null: .null
        }
    }
}
