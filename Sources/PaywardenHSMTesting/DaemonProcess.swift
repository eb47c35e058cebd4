import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A program the tests start beside them and leave running (HAProxy, `p11-kit server`, a software
/// TPM and its resource manager): its output goes to a log file, and it is stopped when the test
/// ends if it still runs.
public final class DaemonProcess: @unchecked Sendable {
    let process: Process
    public let logPath: String

    /// Starts `executable` with `arguments` and `environment` (this process's when nil), its
    /// output appended to `logPath`.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, logPath: String) throws {
        if !FileManager.default.fileExists(atPath: logPath) {
            guard FileManager.default.createFile(atPath: logPath, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try output.seekToEnd()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? output.close()
        self.process = process
        self.logPath = logPath
        TestResources.track(cleanup: { [self] in stop() })
    }

    public var isRunning: Bool { process.isRunning }

    /// What the program wrote so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// SIGTERM, and waits for the program to end; SIGKILL when it has not within `grace`.
    public func stop(grace: Duration = .seconds(5)) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + grace
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Polls `condition` every 20 ms until it holds, for at most `limit`; throws with the log when
    /// it never does or the program ended first.
    public func wait(_ what: String, within limit: Duration = .seconds(20), until condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if try condition() { return }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let state = process.isRunning ? "still running" : "ended with status \(process.terminationStatus)"
        throw DaemonFailure(
            "\(URL(fileURLWithPath: process.executableURL?.path ?? "?").lastPathComponent): \(what) not within \(limit) "
                + "(\(state)); its log: \(log.suffix(2000))")
    }

    public struct DaemonFailure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }
}
