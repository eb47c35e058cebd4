import Glibc

/// A child process started with an empty signal mask and SIGINT and SIGTERM at their defaults.
/// Foundation's `Process` hands the child the mask of the thread that starts it, and the
/// cooperative pool's threads block most signals: wrk, started so, never hears the SIGINT that
/// asks it to stop and report.
struct SpawnedProcess {
    let pid: pid_t
    private var exited = false

    /// Starts `arguments` (the first found on PATH) with `environment`, its standard output and
    /// error to the open file `output`.
    init(_ arguments: [String], environment: [String: String], output: Int32) throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        let status = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard status == 0 else { throw BenchError("\(arguments[0]) did not start: \(String(cString: strerror(status)))") }
        self.pid = pid
    }

    /// Whether it still runs (once it has ended, it is reaped).
    mutating func isRunning() -> Bool {
        guard !exited else { return false }
        var status: Int32 = 0
        exited = waitpid(pid, &status, WNOHANG) != 0
        return !exited
    }

    func signal(_ number: Int32) { kill(pid, number) }
}
