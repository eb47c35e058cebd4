import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP connection to a loopback port, byte by byte, for what an HTTP client will not do:
/// send half a request and wait, or hold a connection open without a request.
public final class RawTCPConnection: @unchecked Sendable {
    private var socket: Int32

    /// What a wait for the server brought.
    public enum Event: Sendable, Equatable {
        /// Bytes arrived.
        case bytes([UInt8])
        /// The server closed the connection (or reset it).
        case closed
        /// Nothing within the time given.
        case silent
    }

    public struct ConnectError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Connects to 127.0.0.1:`port` from `source` (any 127.0.0.0/8 address: one machine can be
    /// several clients). The kernel completes the handshake even while the server is not
    /// accepting, so this returns for a connection the server has not taken yet.
    public init(port: Int, from source: String = "127.0.0.1") throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw ConnectError(description: "socket() failed: errno \(errno)") }
        let socket = self.socket
        let steps: [(String, () -> Int32)] = [
            ("bind() to \(source)", { Self.call(Glibc.bind, socket, source, port: 0) }),
            ("connect() to port \(port)", { Self.call(Glibc.connect, socket, "127.0.0.1", port: port) }),
        ]
        for (step, run) in steps where run() != 0 {
            let error = errno
            Glibc.close(socket)
            throw ConnectError(description: "\(step) failed: errno \(error)")
        }
    }

    /// `bind` or `connect` with an IPv4 address and port.
    private static func call(
        _ operation: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32, _ socket: Int32, _ host: String, port: Int
    ) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { operation(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    deinit { close() }

    public func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw ConnectError(description: "send() wrote \(sent) of \(bytes.count) bytes: errno \(errno)") }
    }

    /// Waits up to `timeout` for the server: the first bytes that arrive, its close, or silence.
    public func wait(upTo timeout: Duration) -> Event {
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, milliseconds) > 0 else { return .silent }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        return count > 0 ? .bytes(Array(buffer.prefix(count))) : .closed
    }

    /// Reads until the server has sent `marker` (returning everything read), closed, or gone silent
    /// for `timeout`.
    public func read(until marker: String, upTo timeout: Duration) -> (text: String, event: Event) {
        var received: [UInt8] = []
        while true {
            switch wait(upTo: timeout) {
            case .bytes(let bytes):
                received += bytes
                let text = String(decoding: received, as: UTF8.self)
                if text.contains(marker) { return (text, .bytes(received)) }
            case let event:
                return (String(decoding: received, as: UTF8.self), event)
            }
        }
    }

    /// Discards what the server sends until it closes the connection (`.closed`) or stays silent
    /// for `timeout` (`.silent`).
    public func drain(upTo timeout: Duration) -> Event {
        while true {
            let event = wait(upTo: timeout)
            if case .bytes = event { continue }
            return event
        }
    }

    public func close() {
        guard socket >= 0 else { return }
        Glibc.close(socket)
        socket = -1
    }
}
