import Foundation
import Hummingbird
import HummingbirdAuth
import NIOCore
import PaywardenServices

/// Per-request state: the API key an authenticator identified the caller by (hummingbird-auth's
/// identity), nil until one has, or when none could.
public struct PaywardenRequestContext: AuthRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var identity: APIKey?
    /// The connection's peer: what per-client rate limits count by.
    public let remoteAddress: SocketAddress?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// Every Codable response (health, readiness, errors) with the one encoder's settings.
    public var responseEncoder: JSONEncoder { JSONResponses.encoder }
}
