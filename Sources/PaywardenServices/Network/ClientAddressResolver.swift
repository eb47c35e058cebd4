import Foundation
import NIOCore

/// Who the client is: the peer's address, or, when the peer is one of the configured reverse
/// proxies, the right-most `X-Forwarded-For` entry that is not itself a trusted proxy (entries to
/// its left are the client's own claims). What the notification allow-list, eProtect's per-client
/// limit and the per-client connection cap count by. IPv4-mapped IPv6 addresses are the IPv4
/// address they carry, so a dual-stack listener sees one client as one.
public struct ClientAddressResolver: Sendable {
    let trustedProxies: [IPAddressBlock]

    public init(trustedProxies: [IPAddressBlock]) {
        self.trustedProxies = trustedProxies
    }

    /// Nil when the address cannot be known (a Unix socket, or a forwarded entry that is not an address).
    public func clientAddress(peer: SocketAddress?, forwardedFor: [String]) -> [UInt8]? {
        guard let peerBytes = IPAddressBlock.addressBytes(peer) else { return nil }
        guard isTrustedProxy(peerBytes), !forwardedFor.isEmpty else { return peerBytes }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            guard let bytes = IPAddressBlock.addressBytes(Self.withoutPort(hop)) else { return nil }
            if !isTrustedProxy(bytes) { return bytes }
        }
        return nil
    }

    /// Some proxies write the client's port too: `198.51.100.7:5678`, `[2001:db8::1]:5678`.
    public static func withoutPort(_ hop: String) -> String {
        if hop.hasPrefix("["), let end = hop.firstIndex(of: "]") { return String(hop[hop.index(after: hop.startIndex)..<end]) }
        let colons = hop.filter { $0 == ":" }.count
        if colons == 1, let colon = hop.firstIndex(of: ":") { return String(hop[..<colon]) }
        return hop
    }

    public func isTrustedProxy(_ address: [UInt8]) -> Bool { trustedProxies.contains { $0.contains(address) } }

    /// What per-client limits count by: an IPv4 address, or an IPv6 /64 (a client controls the rest
    /// of its /64, so counting /128s would let it step around the limit).
    public static func limitKey(_ address: [UInt8]?) -> String {
        // Unknown only for a Unix socket or a proxy's unreadable entry: one bucket for those.
        guard let address else { return "unknown" }
        if address.count == 4 { return address.map { String($0) }.joined(separator: ".") }
        return "v6:" + address.prefix(8).map { String($0, radix: 16) }.joined(separator: ":")
    }
}
