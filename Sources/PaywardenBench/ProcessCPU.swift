import Glibc

/// The CPU time this process has used, all threads, user and system: a benchmark's cost per
/// operation that does not depend on how much of the shared machine it got.
enum ProcessCPU {
    static func now() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
