import Foundation
import PaywardenPrimitives
import Synchronization

/// Ships each audit line, as written to the file, to syslog: RFC 5424 messages over a local datagram
/// socket or UDP to loopback (``SyslogDestination``), so the trail has a copy off the machine as
/// soon as the local daemon forwards it.
///
/// A message is `<85>1 TIMESTAMP HOSTNAME paywarden PID ACTION - LINE`: facility authpriv (10),
/// whose files syslog daemons keep readable by administrators only, severity notice (5); the
/// timestamp is the record's; `MSG` is the audit line byte for byte without its newline (RFC 5424's
/// MSG-ANY, no byte order mark), so what arrives is what the file holds. Sending never blocks a
/// request: a daemon that is down or too slow to take the datagram now loses that copy, the file
/// keeps the line, and `onFailure` is told (the service counts it and alerts on it).
public final class AuditSyslog: Sendable {
    public let destination: SyslogDestination
    private let header: String
    private let onFailure: @Sendable (String) -> Void
    /// The connected socket, -1 until the next line opens one (again, after a failure).
    private let connection = Mutex<Int32>(-1)

    public init(destination: SyslogDestination, onFailure: @escaping @Sendable (String) -> Void = { _ in }) {
        self.destination = destination
        self.onFailure = onFailure
        self.header = " " + Self.field(ProcessInfo.processInfo.hostName, maxLength: 255) + " paywarden \(getpid()) "
    }

    deinit {
        let descriptor = connection.withLock { $0 }
        if descriptor >= 0 { close(descriptor) }
    }

    /// The message for `line` (no newline) of `record`.
    func message(_ line: some Collection<UInt8>, of record: AuditLog.Record) -> [UInt8] {
        let seconds = record.time.timeIntervalSince1970
        let whole = Int(seconds.rounded(.down))
        let micros = min(999_999, max(0, Int(((seconds - Double(whole)) * 1_000_000).rounded(.down))))
        let fraction = String(micros)
        let timestamp =
            UTCDateTime.text(secondsSince1970: whole, zone: "")
            + "." + String(repeating: "0", count: 6 - fraction.count) + fraction + "Z"
        let prefix = "<85>1 " + timestamp + header + Self.field(record.action, maxLength: 32) + " - "
        return Array(prefix.utf8) + line
    }

    /// Sends `line` of `record`; a failure is told to `onFailure`, never thrown. A daemon that was
    /// restarted since the last line (its socket made anew: `ECONNREFUSED`) gets the line on a new
    /// connection; one that cannot take it now (`EAGAIN`, `ENOBUFS`) loses this copy only.
    func ship(_ line: some Collection<UInt8>, of record: AuditLog.Record) {
        let message = message(line, of: record)
        let failure: String? = connection.withLock { descriptor in
            var reason = ""
            for _ in 0..<2 {
                if descriptor < 0 {
                    switch Self.openSocket(to: destination) {
                    case .success(let opened): descriptor = opened
                    case .failure(let error): return error.description
                    }
                }
                let sent = message.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
                if sent == message.count { return nil }
                let code = errno
                reason = sent < 0 ? String(cString: strerror(code)) : "sent \(sent) of \(message.count) bytes"
                if sent < 0, code == EAGAIN || code == ENOBUFS { return reason }
                close(descriptor)
                descriptor = -1
                guard sent < 0, [ECONNREFUSED, ENOTCONN, EPIPE, ECONNRESET].contains(code) else { return reason }
            }
            return reason
        }
        if let failure { onFailure("an audit line was not shipped to \(destination): \(failure)") }
    }

    /// Opens the socket now, or says why it cannot be: `serve` refuses to start on a destination
    /// nothing can be sent to (a mistyped path, no permission).
    public func openNow() -> String? {
        connection.withLock { descriptor in
            if descriptor >= 0 { return nil }
            switch Self.openSocket(to: destination) {
            case .success(let opened):
                descriptor = opened
                return nil
            case .failure(let error):
                return error.description
            }
        }
    }

    /// A datagram socket connected to `destination`, or why there is none.
    private static func openSocket(to destination: SyslogDestination) -> Result<Int32, ShipError> {
        switch destination {
        case .unixSocket(let path):
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            withUnsafeMutableBytes(of: &address.sun_path) { buffer in
                for (index, byte) in bytes.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
            }
            return connectedSocket(AF_UNIX, &address, socklen_t(MemoryLayout<sockaddr_un>.size))
        case .udp(let host, let port):
            if host.contains(":") {
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = in_port_t(UInt16(port).bigEndian)
                guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return .failure(ShipError("not an address: \(host)")) }
                return connectedSocket(AF_INET6, &address, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return .failure(ShipError("not an address: \(host)")) }
            return connectedSocket(AF_INET, &address, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }

    private static func connectedSocket<Address>(_ family: Int32, _ address: inout Address, _ length: socklen_t) -> Result<Int32, ShipError>
    {
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failure(ShipError("socket: \(String(cString: strerror(errno)))")) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            return .failure(ShipError("connect: \(reason)"))
        }
        return .success(descriptor)
    }

    private struct ShipError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// A header field: printable US-ASCII without spaces (RFC 5424's PRINTUSASCII), at most
    /// `maxLength` characters; `-` when nothing is left.
    static func field(_ text: String, maxLength: Int) -> String {
        let kept = String(String.UnicodeScalarView(text.unicodeScalars.filter { (33...126).contains($0.value) }.prefix(maxLength)))
        return kept.isEmpty ? "-" : kept
    }
}
