import Foundation
import Hummingbird
import NIOCore

/// Per-request state: the authenticated API key, once the authenticator has run.
public struct PaywardenRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var apiKey: APIKey?
    /// The connection's peer: what per-client rate limits count by.
    public let remoteAddress: SocketAddress?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// Every Codable response (health, readiness, errors) with the one encoder's settings.
    public var responseEncoder: JSONEncoder { JSONResponses.encoder }
}
