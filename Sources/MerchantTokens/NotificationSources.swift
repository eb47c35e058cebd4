import Foundation
import NIOCore
import PaywardenServices

/// Who may send a merchant-token notification: Apple's ranges. The notification carries no
/// authentication, so the source address is the only gate before Paywarden spends a database
/// write on it; behind a reverse proxy the forwarded address is believed only from the proxies
/// the server trusts (``ClientAddressResolver``), never from anyone else.
public struct NotificationSources: Sendable {
    let allowed: [IPAddressBlock]
    public let clients: ClientAddressResolver

    /// `clients` is the server's one reading of the forwarded address (its trusted proxies).
    public init(allowed: [IPAddressBlock], clients: ClientAddressResolver) {
        self.allowed = allowed
        self.clients = clients
    }

    public func admits(peer: SocketAddress?, forwardedFor: [String]) -> Bool {
        guard let address = clients.clientAddress(peer: peer, forwardedFor: forwardedFor) else { return false }
        return allowed.contains { $0.contains(address) }
    }
}
