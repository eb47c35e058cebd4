import MerchantTokens
import NIOCore
import PaywardenConfiguration
import PaywardenServices
import Testing

@testable import PaywardenServer

/// Who may send Apple's notification: CIDR blocks, IPv4-mapped IPv6, and the forwarded address
/// believed from configured proxies only, right-most first.
struct NotificationSourceTests {
    @Test func blocksParseAndMatchBothFamilies() throws {
        let apple = try #require(IPAddressBlock("17.58.0.0/18"))
        #expect(apple.description == "17.58.0.0/18")
        #expect(apple.contains(try #require(IPAddressBlock.addressBytes("17.58.63.255"))))
        #expect(!apple.contains(try #require(IPAddressBlock.addressBytes("17.58.64.0"))))
        // IPv4-mapped IPv6 is the IPv4 address it carries.
        #expect(apple.contains(try #require(IPAddressBlock.addressBytes("::ffff:17.58.0.1"))))
        let v6 = try #require(IPAddressBlock("2001:db8::/32"))
        #expect(v6.contains(try #require(IPAddressBlock.addressBytes("2001:db8:ffff::1"))))
        #expect(!v6.contains(try #require(IPAddressBlock.addressBytes("2001:db9::1"))))
        #expect(!v6.contains(try #require(IPAddressBlock.addressBytes("17.58.0.1"))))
        #expect(IPAddressBlock("10.0.0.1")?.prefixLength == 32)
        for bad in ["17.58.0.0/33", "17.58.0.0/", "17.58.0/18", "::1/129", "host.example", "17.58.0.0/18/1", "", "0x11.58.0.0/18"] {
            #expect(IPAddressBlock(bad) == nil, "\(bad)")
        }
        for bad in ["17.58.0.9:443", "[::1]", "fe80::1%eth0", "017.58.0.9x", " 17.58.0.9"] {
            #expect(IPAddressBlock.addressBytes(bad) == nil, "\(bad)")
        }
    }

    @Test func theForwardedAddressIsBelievedFromConfiguredProxiesOnly() throws {
        let sources = NotificationSources(
            allowed: [try #require(IPAddressBlock("17.58.0.0/18"))],
            clients: ClientAddressResolver(trustedProxies: [try #require(IPAddressBlock("10.0.0.0/8"))]))
        let proxy = try SocketAddress(ipAddress: "10.1.2.3", port: 443)
        let stranger = try SocketAddress(ipAddress: "192.0.2.7", port: 443)
        let apple = try SocketAddress(ipAddress: "17.58.1.1", port: 443)
        #expect(sources.admits(peer: apple, forwardedFor: []))
        #expect(sources.admits(peer: apple, forwardedFor: ["192.0.2.9"]), "a non-proxy peer's header is ignored")
        #expect(!sources.admits(peer: stranger, forwardedFor: ["17.58.0.9"]), "nor believed")
        #expect(sources.admits(peer: proxy, forwardedFor: ["17.58.0.9"]))
        #expect(sources.admits(peer: proxy, forwardedFor: ["192.0.2.9, 17.58.0.9, 10.9.9.9"]), "proxies on the right are skipped")
        #expect(!sources.admits(peer: proxy, forwardedFor: ["17.58.0.9, 192.0.2.9"]), "the right-most stranger is the client")
        // Some proxies write the client's port too: the address is read without it.
        #expect(sources.admits(peer: proxy, forwardedFor: ["17.58.0.9:5000"]), "an entry with a port is its address")
        #expect(!sources.admits(peer: proxy, forwardedFor: ["192.0.2.9:5000"]))
        #expect(!sources.admits(peer: proxy, forwardedFor: ["[2001:db8::1]:443"]))
        #expect(!sources.admits(peer: proxy, forwardedFor: ["17.58.0.9:5000:1"]), "not an address with a port")
        #expect(!sources.admits(peer: proxy, forwardedFor: ["10.2.2.2"]), "only proxies: the client is unknown")
        #expect(sources.admits(peer: proxy, forwardedFor: ["::ffff:17.58.0.9"]))
        #expect(!sources.admits(peer: proxy, forwardedFor: []), "a proxy itself is not Apple")
        #expect(throws: (any Error).self) { try IPAddressBlock.blocks(["17.58.0.0/40"], SettingCatalog.merchantTokenAllowedSources) }
    }
}
