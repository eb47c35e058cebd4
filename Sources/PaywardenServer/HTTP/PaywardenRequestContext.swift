import Foundation
import Hummingbird

/// Per-request state: the authenticated API key, once the authenticator has run.
public struct PaywardenRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var apiKey: APIKey?

    public init(source: Source) {
        self.coreContext = .init(source: source)
    }

    /// Every Codable response (health, readiness, errors) with the one encoder's settings.
    public var responseEncoder: JSONEncoder { JSONResponses.encoder }
}
