import Foundation
import PaywardenPrimitives
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A syslog daemon's receiving end for tests: a datagram socket bound to a path or to a loopback
/// UDP port, whose datagrams are read back one at a time.
public final class SyslogReceiver: Sendable {
    /// Where a sender reaches this receiver.
    public let destination: SyslogDestination
    private let descriptor: Int32
    /// The socket file, removed when the receiver closes.
    private let socketPath: String?
    private let closed = Mutex(false)

    struct ReceiverError: Error, CustomStringConvertible {
        let description: String
    }

    /// A receiver on a unix datagram socket at `path` (its directory must exist), as a daemon
    /// started again binds the same path.
    public static func unixSocket(at path: String) throws -> SyslogReceiver {
        let bytes = Array(path.utf8)
        var address = sockaddr_un()
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ReceiverError(description: "the socket path is too long for sun_path: \(path)")
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ReceiverError(description: "socket: errno \(errno)") }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let code = errno
            _ = Glibc.close(descriptor)
            throw ReceiverError(description: "cannot bind \(path): errno \(code)")
        }
        return SyslogReceiver(destination: .unixSocket(path: path), descriptor: descriptor, socketPath: path)
    }

    /// A receiver on a unix datagram socket in a new temporary directory (removed by the test's
    /// resources).
    public static func unixSocket() throws -> SyslogReceiver {
        let directory = NSTemporaryDirectory() + "pw-syslog-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TestResources.track(directory: directory)
        return try unixSocket(at: directory + "/log.sock")
    }

    /// A receiver on a UDP port of 127.0.0.1 the kernel picks.
    public static func udp() throws -> SyslogReceiver {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ReceiverError(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            _ = Glibc.close(descriptor)
            throw ReceiverError(description: "cannot bind a loopback UDP port: errno \(code)")
        }
        return SyslogReceiver(
            destination: .udp(host: "127.0.0.1", port: Int(UInt16(bigEndian: address.sin_port))), descriptor: descriptor, socketPath: nil)
    }

    private init(destination: SyslogDestination, descriptor: Int32, socketPath: String?) {
        self.destination = destination
        self.descriptor = descriptor
        self.socketPath = socketPath
    }

    deinit {
        close()
    }

    /// Stops receiving: the socket is closed and its file removed, as when a daemon stops.
    public func close() {
        guard
            !closed.withLock({ wasClosed in
                defer { wasClosed = true }
                return wasClosed
            })
        else { return }
        _ = Glibc.close(descriptor)
        if let socketPath { unlink(socketPath) }
    }

    /// The next datagram, or nil when none comes within `timeout`.
    public func next(timeout: Duration = .seconds(5)) -> [UInt8]? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var wait = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            let ready = poll(&wait, 1, max(1, milliseconds))
            if ready < 0, errno == EINTR { continue }
            guard ready == 1 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            return count < 0 ? nil : Array(buffer.prefix(count))
        }
    }

    /// Every datagram waiting now.
    public func drain() -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while let message = next(timeout: .milliseconds(200)) { messages.append(message) }
        return messages
    }
}
