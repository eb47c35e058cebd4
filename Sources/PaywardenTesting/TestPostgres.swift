import Foundation
import Logging
import PaywardenPrimitives
import PaywardenStorage
import PaywardenStoragePostgres
import PaywardenStorageSQL
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real, throw-away PostgreSQL cluster for the tests: `initdb` in a temporary directory, run as
/// an unprivileged user (`postgres` when the tests run as root), password authentication
/// (SCRAM) on a free loopback port. Started once per test process on first use and stopped when
/// the process exits; each test takes a database of its own from ``database()``.
public final class TestPostgres: Sendable {
    public let port: Int
    public let username = "paywarden"
    public let password: String
    /// A file holding ``password`` (mode 0600), as an operator would give it.
    public let passwordFile: String
    let directory: String
    let binaries: String
    private let databases = Atomic<Int>(0)
    private let server = Mutex<Process?>(nil)

    /// Why the cluster could not be started.
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    private static let cluster = Mutex<TestPostgres?>(nil)

    /// The process's cluster, started on first use.
    public static func shared() throws -> TestPostgres {
        try cluster.withLock { cluster in
            if let cluster { return cluster }
            let started = try TestPostgres()
            cluster = started
            atexit { TestPostgres.stopSharedCluster() }
            return started
        }
    }

    private static func stopSharedCluster() {
        guard let cluster = cluster.withLock({ $0 }) else { return }
        _ = try? cluster.control(["stop", "-m", "immediate"])
        try? FileManager.default.removeItem(atPath: cluster.directory)
    }

    private init() throws {
        Self.stopAbandonedClusters()
        guard let binaries = Self.findBinaries() else {
            throw StartError(description: "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): `make test` installs it")
        }
        self.binaries = binaries
        directory =
            NSTemporaryDirectory() + "paywarden-postgres-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(6))"
        password = Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        passwordFile = directory + "/password"
        port = try Self.freePort()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(password.utf8).write(to: URL(fileURLWithPath: passwordFile))
        chmod(passwordFile, 0o600)
        if Self.runsAsRoot {
            // The cluster's files belong to the unprivileged user; the password file stays root's.
            try Self.check(ChildProcess.run("/bin/chown", ["postgres:postgres", directory]), "chown")
            try Data(password.utf8).write(to: URL(fileURLWithPath: directory + "/pwfile"))
            try Self.check(ChildProcess.run("/bin/chown", ["postgres:postgres", directory + "/pwfile"]), "chown")
        } else {
            try Data(password.utf8).write(to: URL(fileURLWithPath: directory + "/pwfile"))
        }
        try Self.check(
            asClusterUser(
                binaries + "/initdb",
                [
                    "-D", directory + "/data", "-U", username, "--pwfile", directory + "/pwfile", "--auth", "scram-sha-256", "-E", "UTF8",
                    "--no-instructions",
                ]),
            "initdb")
        try? FileManager.default.removeItem(atPath: directory + "/pwfile")
        try start()
    }

    /// Starts the server (again, after ``stop()``), on the same port with the same data.
    public func start() throws {
        // The server runs as this process's child, not daemonised by pg_ctl: Foundation's Process
        // knows a child has ended by a socket the child inherits, which a daemon would keep open.
        let postgres = binaries + "/postgres"
        let arguments = [
            "-D", directory + "/data", "-p", "\(port)", "-k", directory, "-c", "listen_addresses=127.0.0.1",
            // fsync off: the tests crash Paywarden, never the machine, and it saves seconds per test.
            "-c", "fsync=off", "-c", "max_connections=200",
        ]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.runsAsRoot ? "/usr/sbin/runuser" : postgres)
        process.arguments = Self.runsAsRoot ? ["-u", "postgres", "--", postgres] + arguments : arguments
        process.environment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C"]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let log = directory + "/server.log"
        if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        if Self.runsAsRoot { chown(log, Self.postgresUser.uid, Self.postgresUser.gid) }
        let logHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        logHandle.seekToEndOfFile()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = logHandle
        process.standardError = logHandle
        try process.run()
        try? logHandle.close()
        server.withLock { $0 = process }
        let deadline = Date() + 60
        while Date() < deadline {
            guard process.isRunning else { break }
            let ready = try ChildProcess.run(
                binaries + "/pg_isready", ["-q", "-h", "127.0.0.1", "-p", "\(port)"], environment: ["PATH": "/usr/bin:/bin"])
            if ready.status == 0 { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw StartError(description: "PostgreSQL did not start: \(said.suffix(2000))")
    }

    private static var postgresUser: (uid: uid_t, gid: gid_t) {
        guard let entry = getpwnam("postgres") else { return (0, 0) }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    /// Stops the server at once (`immediate`: connections are cut, as when a server dies).
    public func stop() throws {
        try Self.check(try control(["stop", "-w", "-m", "immediate"]), "pg_ctl stop")
        server.withLock { $0 }?.waitUntilExit()
    }

    private func control(_ arguments: [String]) throws -> ChildProcess.Output {
        try asClusterUser(binaries + "/pg_ctl", ["-D", directory + "/data"] + arguments)
    }

    /// A new, empty database; its name.
    public func database() throws -> String {
        let name = "paywarden_test_\(databases.add(1, ordering: .relaxed).newValue)"
        let output = try ChildProcess.run(
            binaries + "/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", username, name],
            environment: ["PGPASSWORD": password, "PATH": "/usr/bin:/bin"])
        try Self.check(output, "createdb")
        return name
    }

    /// `pg_dump` of `database`, as a thief with the database's credentials would take it.
    public func dump(database: String) throws -> String {
        let output = try ChildProcess.run(
            binaries + "/pg_dump", ["-h", "127.0.0.1", "-p", "\(port)", "-U", username, "--data-only", database],
            environment: ["PGPASSWORD": password, "PATH": "/usr/bin:/bin"])
        try Self.check(output, "pg_dump")
        return output.stdout
    }

    /// `pg_dump --format=custom` of `database` into `file`, as an operator backs it up: one
    /// consistent snapshot, taken while instances write.
    public func backUp(database: String, to file: String) throws {
        let output = try ChildProcess.run(
            binaries + "/pg_dump", ["-h", "127.0.0.1", "-p", "\(port)", "-U", username, "--format=custom", "--file", file, database],
            environment: ["PGPASSWORD": password, "PATH": "/usr/bin:/bin"])
        try Self.check(output, "pg_dump")
    }

    /// `pg_restore` of a ``backUp(database:to:)`` file into `database` (new and empty), in one transaction.
    public func restore(_ file: String, into database: String) throws {
        let output = try ChildProcess.run(
            binaries + "/pg_restore",
            [
                "-h", "127.0.0.1", "-p", "\(port)", "-U", username, "--no-owner", "--single-transaction", "--exit-on-error", "-d",
                database, file,
            ],
            environment: ["PGPASSWORD": password, "PATH": "/usr/bin:/bin"])
        try Self.check(output, "pg_restore")
    }

    /// The URL an operator would set (the password comes from ``passwordFile``).
    public func url(database: String) -> String {
        "postgres://\(username)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// - Parameter statementTimeout: 10 s unless a test is about the timeout: a CI machine running
    ///   the commands of a test beside it has been seen to keep a statement past 2 s.
    public func settings(database: String, statementTimeout: Duration = .seconds(10)) -> PostgresConnectionSettings {
        PostgresConnectionSettings(
            host: "127.0.0.1", port: port, username: username, password: Sensitive(password), database: database, tls: .disable,
            maximumConnections: 8, statementTimeout: statementTimeout, displayLocation: url(database: database))
    }

    /// Runs `body` with the stores on a new database (migrated), the pool running meanwhile.
    public func withDatabase<R: Sendable>(
        migrated: Bool = true, statementTimeout: Duration = .seconds(10), _ body: (SQLDatabase<PostgresDriver>) async throws -> R
    ) async throws -> R {
        let database = try PostgresDriver.make(
            settings(database: try self.database(), statementTimeout: statementTimeout),
            logger: {
                var logger = Logger(label: "test-postgres")
                logger.logLevel = .warning
                return logger
            }())
        let pool = Task { await database.engine.run() }
        defer { pool.cancel() }
        if migrated { _ = try await database.migrate() }
        return try await body(database)
    }

    // MARK: Helpers

    private static var runsAsRoot: Bool { geteuid() == 0 }

    /// Clusters left by test processes that died before their exit handler ran (the directory
    /// names the process): stopped and removed, so they do not pile up between runs.
    private static func stopAbandonedClusters() {
        let temporary = NSTemporaryDirectory()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []
        for entry in entries where entry.hasPrefix("paywarden-postgres-") {
            let parts = entry.split(separator: "-")
            guard parts.count >= 4, let pid = Int32(parts[2]), kill(pid, 0) != 0, errno == ESRCH else { continue }
            let directory = temporary + entry
            if let pidLine = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)
                .split(separator: "\n").first, let server = Int32(pidLine)
            {
                kill(server, SIGQUIT)  // PostgreSQL's immediate shutdown
            }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    private func asClusterUser(_ executable: String, _ arguments: [String]) throws -> ChildProcess.Output {
        let environment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C"]
        guard Self.runsAsRoot else {
            return try ChildProcess.run(executable, arguments, environment: environment, directory: URL(fileURLWithPath: directory))
        }
        return try ChildProcess.run(
            "/usr/sbin/runuser", ["-u", "postgres", "--", executable] + arguments, environment: environment,
            directory: URL(fileURLWithPath: directory))
    }

    private static func check(_ output: ChildProcess.Output, _ step: String) throws {
        guard output.status == 0 else {
            throw StartError(description: "\(step) failed (\(output.status)): \(output.stderr)\(output.stdout)")
        }
    }

    private static func findBinaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "\(root)/\($0)/bin" }
            .first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }
    }

    /// A loopback port nobody listens on now (the kernel's pick for port 0).
    public static func freePort() throws -> Int {
        try LoopbackPort.unused()
    }
}
