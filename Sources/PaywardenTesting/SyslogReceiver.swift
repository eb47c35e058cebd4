import Foundation
import PaywardenPrimitives
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A syslog daemon's receiving end for tests: a datagram socket bound to a path in a temporary
/// directory or to a loopback UDP port, whose datagrams are read back one at a time.
public final class SyslogReceiver: @unchecked Sendable {
    /// Where a sender reaches this receiver.
    public let destination: SyslogDestination
    private let descriptor: Int32
    private let directory: String?
    private let closed = Mutex(false)

    /// A receiver on a unix datagram socket in a new temporary directory.
    public static func unixSocket() throws -> SyslogReceiver {
        let directory = NSTemporaryDirectory() + "paywarden-syslog-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/log.sock"
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in Array(path.utf8).enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, bound == 0 else { throw ReceiverError("cannot bind \(path): errno \(errno)") }
        return SyslogReceiver(destination: .unixSocket(path: path), descriptor: descriptor, directory: directory)
    }

    /// A receiver on a UDP port of 127.0.0.1 the kernel picks.
    public static func udp() throws -> SyslogReceiver {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard descriptor >= 0, bound else { throw ReceiverError("cannot bind a loopback UDP port: errno \(errno)") }
        return SyslogReceiver(destination: .udp(host: "127.0.0.1", port: Int(UInt16(bigEndian: address.sin_port))), descriptor: descriptor)
    }

    private init(destination: SyslogDestination, descriptor: Int32, directory: String? = nil) {
        self.destination = destination
        self.descriptor = descriptor
        self.directory = directory
    }

    deinit {
        close()
    }

    /// Stops receiving: the socket is closed and its path removed, as when a daemon stops.
    public func close() {
        guard
            !closed.withLock({ wasClosed in
                defer { wasClosed = true }
                return wasClosed
            })
        else { return }
        _ = Glibc.close(descriptor)
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// The next datagram, or nil when none comes within `timeout`.
    public func next(timeout: Duration = .seconds(5)) -> [UInt8]? {
        var wait = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&wait, 1, milliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        return count < 0 ? nil : Array(buffer.prefix(count))
    }

    /// Every datagram waiting now.
    public func drain() -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while let message = next(timeout: .milliseconds(200)) { messages.append(message) }
        return messages
    }

    struct ReceiverError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
