import Foundation

/// Which HSM key the service last chose to present to one processor upstream, and since when:
/// what `paywarden keys list` shows while two keys are configured for a changeover. Written by the
/// instances when they choose a key (at start and at each changeover), never by an admin.
public struct UpstreamClientKeyRecord: Sendable, Hashable {
    /// The upstream's message format (`cnpapi`, `mercurypay`, `radial`).
    public var upstream: String
    /// The key's `CKA_ID`, lowercase hex.
    public var keyID: String
    /// When an instance first presented this key to the upstream.
    public var since: Date

    public init(upstream: String, keyID: String, since: Date) {
        self.upstream = upstream
        self.keyID = keyID
        self.since = since
    }
}
