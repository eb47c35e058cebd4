import AsyncHTTPClient
import Foundation
import NIOCore
import PaywardenPrimitives

/// Debian's HAProxy in front of `paywarden serve` instances, as an operator puts it there: HTTP
/// mode, health-checking `GET /readyz` every `checkInterval`, a backend down after two failed
/// checks and up after two good ones. It never retries a request (`retries 0`): a refused or
/// closed connection reaches the client as a failure, so only the service's drain keeps a
/// restart whole (with the drain at 0 a rolling restart here fails 30-odd requests of 500). Its
/// CSV statistics say which backends it sees up.
public final class HAProxyBalancer: @unchecked Sendable {
    public static let executable = "/usr/sbin/haproxy"

    let process: DaemonProcess
    public let port: Int
    let statisticsPort: Int
    let directory: String

    /// Whether HAProxy is installed (`make test` installs it).
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    /// Starts HAProxy balancing over `backends` (loopback ports, named `s0`, `s1`, …).
    public static func start(backends: [Int], checkInterval: Duration = .milliseconds(250)) throws -> HAProxyBalancer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("haproxy-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TestResources.track(directory: directory)
        let port = try LoopbackPort.unused()
        let statisticsPort = try LoopbackPort.unused()
        let interval = "\(checkInterval.components.seconds * 1000 + checkInterval.components.attoseconds / 1_000_000_000_000_000)ms"
        let servers = backends.enumerated().map { "    server s\($0.offset) 127.0.0.1:\($0.element) check" }
        let configuration = """
            global
                maxconn 1024
            defaults
                mode http
                timeout connect 2s
                timeout client 30s
                timeout server 30s
                retries 0
            frontend api
                bind 127.0.0.1:\(port)
                default_backend paywarden
            frontend statistics
                bind 127.0.0.1:\(statisticsPort)
                stats enable
                stats uri /stats
            backend paywarden
                balance roundrobin
                option httpchk GET /readyz
                http-check expect status 200
                default-server inter \(interval) fall 2 rise 2
            \(servers.joined(separator: "\n"))

            """
        let path = directory + "/haproxy.cfg"
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: path))
        let process = try DaemonProcess(executable, ["-db", "-f", path], logPath: directory + "/haproxy.log")
        return HAProxyBalancer(process: process, port: port, statisticsPort: statisticsPort, directory: directory)
    }

    init(process: DaemonProcess, port: Int, statisticsPort: Int, directory: String) {
        self.process = process
        self.port = port
        self.statisticsPort = statisticsPort
        self.directory = directory
    }

    /// What HAProxy wrote.
    public var log: String { process.log }

    /// Each backend's state as HAProxy's statistics report it (`UP`, `DOWN`, `UP 1/2`, …), by
    /// its position in `backends`.
    public func states() async throws -> [Int: String] {
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(statisticsPort)/stats;csv")
        let response = try await TestServer.client.execute(request, timeout: .seconds(5))
        let csv = String(buffer: try await response.body.collect(upTo: 1 << 20))
        let lines = csv.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        guard let header = lines.first, let name = header.firstIndex(of: "svname"), let status = header.firstIndex(of: "status") else {
            throw HAProxyFailure("no statistics header in \(csv.prefix(200))")
        }
        var states: [Int: String] = [:]
        for fields in lines.dropFirst() where fields.count > max(name, status) && fields[0] == "paywarden" {
            if fields[name].hasPrefix("s"), let index = Int(fields[name].dropFirst()) { states[index] = fields[status] }
        }
        return states
    }

    /// Waits until HAProxy reports backend `index` in `state` (`UP` or `DOWN`); how long it took.
    @discardableResult
    public func wait(for index: Int, to state: String, within limit: Duration = .seconds(30)) async throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < limit {
            if try await states()[index] == state { return clock.now - start }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw HAProxyFailure("backend \(index) not \(state) within \(limit): \(try await states()); log: \(log.suffix(2000))")
    }

    /// Stops HAProxy.
    public func stop() {
        process.stop()
    }

    public struct HAProxyFailure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
