import Foundation
import NIOCore
import PaywardenConfiguration
import PaywardenServices

/// Who may send a merchant-token notification: Apple's ranges. The notification carries no
/// authentication, so the source address is the only gate before Paywarden spends a database
/// write on it; behind a reverse proxy the forwarded address is believed only from the proxies
/// named in the configuration, never from anyone else.
public struct NotificationSources: Sendable {
    let allowed: [IPAddressBlock]
    public let clients: ClientAddressResolver

    public init(allowed: [IPAddressBlock], trustedProxies: [IPAddressBlock]) {
        self.allowed = allowed
        self.clients = ClientAddressResolver(trustedProxies: trustedProxies)
    }

    /// The configured CIDRs, each checked; a bad one names its setting.
    public init(allowed: [String], trustedProxies: [String]) throws(ConfigurationError) {
        self.allowed = try Self.blocks(allowed, SettingCatalog.merchantTokenAllowedSources)
        self.clients = ClientAddressResolver(trustedProxies: try Self.blocks(trustedProxies, SettingCatalog.trustedProxies))
    }

    public func admits(peer: SocketAddress?, forwardedFor: [String]) -> Bool {
        guard let address = clients.clientAddress(peer: peer, forwardedFor: forwardedFor) else { return false }
        return allowed.contains { $0.contains(address) }
    }

    public static func blocks(_ entries: [String], _ setting: Setting) throws(ConfigurationError) -> [IPAddressBlock] {
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
