/// Where audit lines are shipped as they are written (`PAYWARDEN_AUDIT_SYSLOG`): a datagram socket
/// of the machine's syslog daemon or journald, or UDP to a daemon on loopback. Never UDP off the
/// machine: syslog over UDP is cleartext and unacknowledged, so the lines leave the machine through
/// the local daemon's own forwarding (RFC 5425 TLS, RELP), which the operator configures there.
public enum SyslogDestination: Sendable, Hashable, CustomStringConvertible {
    /// A local `SOCK_DGRAM` socket: `/dev/log`, where journald or the syslog daemon listens.
    case unixSocket(path: String)
    /// UDP to a loopback address (RFC 5426).
    case udp(host: String, port: Int)

    /// Why a destination was refused.
    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
    }

    /// `unix:/dev/log` (or the bare path `/dev/log`), `udp:127.0.0.1:514`, `udp:[::1]:514` or
    /// `udp:localhost:514`.
    public init(parsing text: String) throws(Invalid) {
        var value = Substring(text)
        while value.first?.isWhitespace == true { value.removeFirst() }
        while value.last?.isWhitespace == true { value.removeLast() }
        if value.hasPrefix("/") || value.hasPrefix("unix:") {
            let path = String(value.hasPrefix("unix:") ? value.dropFirst("unix:".count) : value)
            guard path.hasPrefix("/"), path.utf8.count < 108 else {
                throw Invalid(description: "a unix socket is an absolute path of fewer than 108 bytes, as unix:/dev/log")
            }
            self = .unixSocket(path: path)
            return
        }
        guard value.hasPrefix("udp:") else {
            throw Invalid(description: "expected unix:/PATH (as unix:/dev/log) or udp:HOST:PORT to loopback (as udp:127.0.0.1:514)")
        }
        let hostAndPort = value.dropFirst("udp:".count).drop(while: { $0 == "/" })
        guard let colon = hostAndPort.lastIndex(of: ":"), let port = Int(hostAndPort[hostAndPort.index(after: colon)...]),
            (1...65_535).contains(port)
        else {
            throw Invalid(description: "udp: needs a host and a port from 1 to 65535, as udp:127.0.0.1:514")
        }
        guard let address = LoopbackAddress.numeric(String(hostAndPort[..<colon])) else {
            throw Invalid(
                description: "udp: only to loopback (127.0.0.0/8, ::1, localhost): syslog over UDP is cleartext; let the local "
                    + "daemon forward over TLS")
        }
        self = .udp(host: address, port: port)
    }

    public var description: String {
        switch self {
        case .unixSocket(let path): "unix:\(path)"
        case .udp(let host, let port): host.contains(":") ? "udp:[\(host)]:\(port)" : "udp:\(host):\(port)"
        }
    }
}
