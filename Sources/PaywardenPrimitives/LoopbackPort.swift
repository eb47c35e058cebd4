#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A loopback TCP port nothing listens on now, as the kernel picks one for a bind to port 0 (the
/// sandbox's stand-ins, the tests' PostgreSQL). Another process may take it before it is used.
public enum LoopbackPort {
    /// Why no port could be picked: the call that failed and its errno.
    public struct Unavailable: Error, CustomStringConvertible {
        public let call: String
        public let errno: Int32

        public var description: String { "no free loopback port: \(call) failed (errno \(errno))" }
    }

    public static func unused() throws(Unavailable) -> Int {
        #if canImport(Glibc)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Unavailable(call: "socket()", errno: errno) }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else { throw Unavailable(call: "bind()", errno: errno) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
