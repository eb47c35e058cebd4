import Foundation
import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 block in CIDR notation (`17.58.0.0/18`, `2001:db8::/32`; a bare address is
/// the block of itself). IPv4-mapped IPv6 addresses are compared as the IPv4 address they carry,
/// so a dual-stack listener does not let `::ffff:17.58.0.1` step around an IPv4 allow-list.
public struct IPAddressBlock: Sendable, Hashable, CustomStringConvertible {
    /// 4 or 16 bytes, with the bits beyond the prefix cleared.
    let network: [UInt8]
    public let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = Self.addressBytes(String(parts[0])) else { return nil }
        let maximum = address.count * 8
        var length = maximum
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...maximum).contains(parsed), parts[1].allSatisfy(\.isASCII) else { return nil }
            length = parsed
        }
        network = Self.masked(address, to: length)
        prefixLength = length
    }

    public func contains(_ address: [UInt8]) -> Bool {
        address.count == network.count && Self.masked(address, to: prefixLength) == network
    }

    public var description: String {
        let family = network.count == 4 ? AF_INET : AF_INET6
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = network.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "\(address)/\(prefixLength)"
    }

    /// The bytes of a textual IPv4 or IPv6 address (no brackets, no zone), IPv4-mapped IPv6 as IPv4.
    public static func addressBytes(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.count <= 45 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff { return Array(bytes[12...]) }
        return bytes
    }

    /// The peer's address bytes; nil for a Unix socket.
    public static func addressBytes(_ address: SocketAddress?) -> [UInt8]? {
        guard let text = address?.ipAddress else { return nil }
        return addressBytes(text)
    }

    private static func masked(_ address: [UInt8], to length: Int) -> [UInt8] {
        address.enumerated().map { index, byte in
            let bits = min(max(length - index * 8, 0), 8)
            return bits == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xff << (8 - bits))
        }
    }
}
