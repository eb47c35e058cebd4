import Foundation
import PaywardenTesting

#if canImport(Glibc)
    import Glibc
#endif

/// The service the tour talks to: the one already listening at `PAYWARDEN_LISTEN` (`make run` in
/// another shell), or one the tour starts from the same environment and stops at the end.
final class TourService: @unchecked Sendable {
    let http: TourHTTP
    /// The process the tour started, if it started one. (Only its pid is read and waited for.)
    private let process: Process?
    private let log: String?

    private init(http: TourHTTP, process: Process?, log: String?) {
        self.http = http
        self.process = process
        self.log = log
    }

    static func findOrStart(listen: String, paywarden: String, workDirectory: String) async throws -> TourService {
        let http = TourHTTP(baseURL: "http://" + listen)
        switch await http.readiness() {
        case .ok?:
            print("Using the service already running at http://\(listen).")
            return TourService(http: http, process: nil, log: nil)
        case .some:
            throw TourFailure("something listens at \(listen) but /readyz is not 200; look at that service's log, or stop it")
        case nil:
            break
        }
        let log = workDirectory + "/serve.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil, attributes: [.posixPermissions: 0o600])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: paywarden)
        process.arguments = ["serve"]
        // Nothing balances the tour's own instance: it stops at once when the tour ends.
        process.environment = ProcessInfo.processInfo.environment.merging(["PAYWARDEN_SHUTDOWN_DRAIN_SECONDS": "0"]) { $1 }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        print("Started `paywarden serve` at http://\(listen) (pid \(process.processIdentifier), log \(log)); it stops when the tour ends.")
        let service = TourService(http: http, process: process, log: log)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if await http.readiness() == .ok { return service }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        let tail = (try? String(contentsOfFile: log, encoding: .utf8)).map { String($0.suffix(2000)) } ?? ""
        service.stop()
        throw TourFailure("the service did not become ready within 60 s:\n\(tail)")
    }

    var startedByTour: Bool { process != nil }

    /// Stops the service the tour started (SIGTERM, then waits); leaves one it found alone.
    func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    /// The last lines of the started service's log, for a failure report.
    var logTail: String? {
        log.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }.map { String($0.suffix(3000)) }
    }
}
