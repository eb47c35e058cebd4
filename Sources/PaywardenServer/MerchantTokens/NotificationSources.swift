import Foundation
import NIOCore
import PaywardenConfiguration

/// Who may send a merchant-token notification: Apple's ranges. The notification carries no
/// authentication, so the source address is the only gate before Paywarden spends a database
/// write on it; behind a reverse proxy the forwarded address is believed only from the proxies
/// named in the configuration, never from anyone else.
struct NotificationSources: Sendable {
    let allowed: [IPAddressBlock]
    let trustedProxies: [IPAddressBlock]

    init(allowed: [IPAddressBlock], trustedProxies: [IPAddressBlock]) {
        self.allowed = allowed
        self.trustedProxies = trustedProxies
    }

    /// The configured CIDRs, each checked; a bad one names its setting.
    init(allowed: [String], trustedProxies: [String]) throws(ConfigurationError) {
        self.allowed = try Self.blocks(allowed, SettingCatalog.merchantTokenAllowedSources)
        self.trustedProxies = try Self.blocks(trustedProxies, SettingCatalog.trustedProxies)
    }

    /// The client's address: the peer's, or, when the peer is a trusted proxy, the right-most
    /// `X-Forwarded-For` entry that is not itself a trusted proxy (entries to its left are the
    /// client's own claims). Nil when the address cannot be known.
    func clientAddress(peer: SocketAddress?, forwardedFor: [String]) -> [UInt8]? {
        guard let peerBytes = IPAddressBlock.addressBytes(peer) else { return nil }
        guard isTrustedProxy(peerBytes), !forwardedFor.isEmpty else { return peerBytes }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            guard let bytes = IPAddressBlock.addressBytes(hop) else { return nil }
            if !isTrustedProxy(bytes) { return bytes }
        }
        return nil
    }

    func admits(peer: SocketAddress?, forwardedFor: [String]) -> Bool {
        guard let address = clientAddress(peer: peer, forwardedFor: forwardedFor) else { return false }
        return allowed.contains { $0.contains(address) }
    }

    private func isTrustedProxy(_ address: [UInt8]) -> Bool { trustedProxies.contains { $0.contains(address) } }

    private static func blocks(_ entries: [String], _ setting: Setting) throws(ConfigurationError) -> [IPAddressBlock] {
        var blocks: [IPAddressBlock] = []
        for entry in entries {
            guard let block = IPAddressBlock(entry) else {
                throw ConfigurationError(
                    "\(setting.environmentName) (\"\(setting.key)\" in the configuration file): \"\(entry.prefix(64))\" is not a CIDR "
                        + "block; expected entries such as 17.58.0.0/18 or 2001:db8::/32")
            }
            blocks.append(block)
        }
        return blocks
    }
}
