import Foundation
import PKCS11

/// The key a processor upstream's client presents, as the service last chose it: during a
/// changeover between two configured keys, the one the upstream was found to accept.
public struct UpstreamKeyInUse: Sendable, Hashable {
    /// The upstream's message format (`cnpapi`, `mercurypay`, `radial`).
    public var upstream: String
    public var keyID: KeyIdentifier
    /// When the service first presented the key to the upstream.
    public var since: Date

    public init(upstream: String, keyID: KeyIdentifier, since: Date) {
        self.upstream = upstream
        self.keyID = keyID
        self.since = since
    }
}
