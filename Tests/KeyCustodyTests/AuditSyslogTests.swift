import Foundation
import KeyCustody
import PaywardenPrimitives
import PaywardenTesting
import Synchronization
import Testing

/// Audit lines shipped to syslog (RFC 5424) as they are written, to a receiving socket of this test:
/// a unix datagram socket and a loopback UDP port.
@Suite struct AuditSyslogTests {
    /// What a message holds: `<85>1 TIMESTAMP HOSTNAME paywarden PID MSGID - MSG`.
    struct Message {
        let priorityAndVersion: String
        let timestamp: String
        let hostname: String
        let appName: String
        let procID: String
        let msgID: String
        let structuredData: String
        let body: [UInt8]

        init(_ bytes: [UInt8]) throws {
            var fields: [String] = []
            var rest = bytes[...]
            for _ in 0..<7 {
                let space = try #require(
                    rest.firstIndex(of: 0x20), "a message of seven header fields: \(String(decoding: bytes, as: UTF8.self))")
                fields.append(String(decoding: rest[..<space], as: UTF8.self))
                rest = rest[(space + 1)...]
            }
            (priorityAndVersion, timestamp, hostname, appName, procID, msgID, structuredData) =
                (fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6])
            body = Array(rest)
        }
    }

    static func record(_ action: String, at time: Date, detail: String?) -> AuditLog.Record {
        AuditLog.Record(
            time: time, user: "admin", action: action, keyID: "0a1b", merchantID: "merchant.com.example", result: "ok", detail: detail)
    }

    static func fileLines(_ path: String) throws -> [[UInt8]] {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))).split(separator: 0x0A).map(Array.init)
    }

    static func temporaryAuditPath() -> String {
        let directory = NSTemporaryDirectory() + "paywarden-audit-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: directory)
        return directory + "/audit.jsonl"
    }

    @Test(arguments: ["unix", "udp"])
    func eachLineArrivesAsItIsInTheFile(transport: String) async throws {
        let receiver = try transport == "unix" ? SyslogReceiver.unixSocket() : SyslogReceiver.udp()
        defer { receiver.close() }
        let path = Self.temporaryAuditPath()
        let log = AuditLog(path: path, syslog: AuditSyslog(destination: receiver.destination))
        let time = Date(timeIntervalSince1970: 1_795_000_000.25)
        try await log.append(Self.record("keys-create", at: time, detail: "CSR written to ./Keys/csr/x.csr"))
        try await log.append(Self.record("vault rotate \u{7} key", at: time, detail: "déjà: non-ASCII text stays as written"))

        let lines = try Self.fileLines(path)
        #expect(lines.count == 2)
        for (index, line) in lines.enumerated() {
            let message = try Message(try #require(receiver.next(), "message \(index + 1) arrived"))
            #expect(message.priorityAndVersion == "<85>1", "authpriv.notice, version 1")
            #expect(message.timestamp == "2026-11-18T11:06:40.250000Z")
            #expect(message.hostname == ProcessInfo.processInfo.hostName.filter { !$0.isWhitespace })
            #expect(message.appName == "paywarden" && message.procID == String(getpid()))
            #expect(message.structuredData == "-" && message.msgID == ["keys-create", "vaultrotatekey"][index])
            #expect(message.body == line, "the file's line byte for byte")
        }
        let actions = lines.map { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }.map { $0?["action"] as? String }
        #expect(actions == ["keys-create", "vault rotate \u{7} key"])
        #expect(receiver.next(timeout: .milliseconds(100)) == nil, "one message a line")
    }

    /// The MSGID is the action in printable US-ASCII without spaces, at most 32 characters.
    @Test func theMessageIDIsTheActionInHeaderCharacters() async throws {
        let receiver = try SyslogReceiver.udp()
        defer { receiver.close() }
        let log = AuditLog(path: Self.temporaryAuditPath(), syslog: AuditSyslog(destination: receiver.destination))
        try await log.append(Self.record("vault rotate \u{7} key", at: Date(), detail: nil))
        try await log.append(Self.record(String(repeating: "x", count: 40), at: Date(), detail: nil))
        try await log.append(Self.record(" ", at: Date(), detail: nil))
        let ids = try [0, 1, 2].map { _ in try Message(try #require(receiver.next())).msgID }
        #expect(ids == ["vaultrotatekey", String(repeating: "x", count: 32), "-"])
    }

    /// A daemon that stops loses the copy, not the line: the file has it and the failure is told.
    /// Started again at the same path, it gets the next line on a new connection, and a restart
    /// between two lines loses nothing.
    @Test func aDaemonThatIsDownLosesTheCopyNotTheLine() async throws {
        let socketPath = try #require(
            { if case .unixSocket(let path) = $0 { path } else { nil } }(try SyslogReceiver.unixSocket().destination))
        let failures = Mutex<[String]>([])
        let path = Self.temporaryAuditPath()
        let log = AuditLog(
            path: path,
            syslog: AuditSyslog(destination: .unixSocket(path: socketPath)) { reason in failures.withLock { $0.append(reason) } })

        var daemon = try SyslogReceiver.unixSocket(at: socketPath)
        try await log.append(Self.record("keys-create", at: Date(), detail: nil))
        #expect(try Message(try #require(daemon.next())).body == (try Self.fileLines(path))[0])

        daemon.close()
        try await log.append(Self.record("keys-import", at: Date(), detail: nil))
        #expect(try Self.fileLines(path).count == 2, "the file has the line")
        let told = failures.withLock { $0 }
        #expect(told.count == 1 && told[0].hasPrefix("an audit line was not shipped to unix:\(socketPath): connect:"), "\(told)")

        daemon = try SyslogReceiver.unixSocket(at: socketPath)
        try await log.append(Self.record("keys-activate", at: Date(), detail: nil))
        #expect(try Message(try #require(daemon.next())).body == (try Self.fileLines(path))[2])

        // Restarted between two lines: the old connection is refused, the line goes on a new one.
        daemon.close()
        daemon = try SyslogReceiver.unixSocket(at: socketPath)
        try await log.append(Self.record("keys-retire", at: Date(), detail: nil))
        #expect(try Message(try #require(daemon.next())).body == (try Self.fileLines(path))[3])
        #expect(failures.withLock { $0.count } == 1, "\(failures.withLock { $0 })")
        daemon.close()
    }

    /// Only a local socket or loopback UDP: syslog over UDP is cleartext.
    @Test func destinationsAreLocalOnly() throws {
        #expect(try SyslogDestination(parsing: "unix:/dev/log") == .unixSocket(path: "/dev/log"))
        #expect(try SyslogDestination(parsing: " /run/systemd/journal/syslog ") == .unixSocket(path: "/run/systemd/journal/syslog"))
        #expect(try SyslogDestination(parsing: "udp:127.0.0.1:514") == .udp(host: "127.0.0.1", port: 514))
        #expect(try SyslogDestination(parsing: "udp://localhost:5514") == .udp(host: "127.0.0.1", port: 5514))
        #expect(try SyslogDestination(parsing: "udp:[::1]:514") == .udp(host: "::1", port: 514))
        #expect(try SyslogDestination(parsing: "udp:[::1]:514").description == "udp:[::1]:514")
        for refused in [
            "udp:10.0.0.5:514", "udp:logs.example.com:514", "udp:127.0.0.1", "udp:127.0.0.1:0", "tcp:127.0.0.1:514",
            "unix:dev/log", "unix:/" + String(repeating: "a", count: 120), "",
        ] {
            #expect(throws: SyslogDestination.Invalid.self, "\(refused)") { try SyslogDestination(parsing: refused) }
        }
    }
}
