import Foundation
import Glibc

/// CPU time, user and system, all threads: a benchmark's cost per operation that does not depend
/// on how much of the shared machine it got. This process's own, or other processes' from /proc
/// (the load test's server, the peer, a stand-in upstream) in clock ticks.
enum ProcessCPU {
    static func now() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    /// The processes' utime + stime so far, in clock ticks; a process gone counts as nothing more.
    static func ticks(_ pids: [Int32]) -> Int {
        pids.reduce(0) { total, pid in
            let fields = statFields(pid)
            // utime and stime are stat's fields 14 and 15; `fields` starts at field 3, the state.
            guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return total }
            return total + user + system
        }
    }

    /// Microseconds of CPU per request between two `ticks` readings, as text with one decimal.
    static func microsecondsPerRequest(from before: Int, to after: Int, requests: Double) -> String {
        String(format: "%.1f", Double(after - before) / Double(sysconf(Int32(_SC_CLK_TCK))) * 1e6 / max(requests, 1))
    }

    /// `pids` and the processes they started (uvicorn's workers).
    static func withChildren(_ pids: [Int32]) -> [Int32] {
        let all = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap(Int32.init) ?? []
        // The parent is stat's field 4.
        return pids + all.filter { child in statFields(child).dropFirst().first.flatMap { Int32($0) }.map(pids.contains) ?? false }
    }

    /// Whether it runs: a process that ended and is not yet reaped (state Z) does not.
    static func isRunning(_ pid: Int32) -> Bool { statFields(pid).first.map { $0 != "Z" } ?? false }

    /// The process's resident set (VmRSS), in kB; nil when it is gone.
    static func residentKilobytes(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return nil }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    /// /proc/PID/stat's fields after the command name (which may hold spaces), from the state on.
    private static func statFields(_ pid: Int32) -> [Substring] {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let end = stat.lastIndex(of: ")") else {
            return []
        }
        return stat[stat.index(after: end)...].split(separator: " ")
    }
}
