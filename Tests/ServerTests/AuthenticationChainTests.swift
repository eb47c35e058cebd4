import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaywardenServices
import Testing

@testable import PaywardenServer

/// The authenticators and the scope requirement on routers of their own (no HSM, no database, no
/// socket): Bearer and Basic identify, chained; the requirement authorises, 401 or 403 in
/// Paywarden's JSON shape; a route that authorises itself sees who the chain identified.
struct AuthenticationChainTests {
    static let decrypter = APIKey.generate(name: "decrypter", scopes: [.decrypt], organization: "acme")
    static let redeemer = APIKey.generate(name: "redeemer", scopes: [.redeem], organization: "acme")
    static func registry() throws -> APIKeyRegistry {
        APIKeyRegistry(keys: [try APIKey(entry: decrypter.entry), try APIKey(entry: redeemer.entry)])
    }

    /// A router whose `/scoped` needs `decrypt` and whose `/who` answers the identity's name (or "none").
    static func router() throws -> Router<PaywardenRequestContext> {
        let router = Router(context: PaywardenRequestContext.self)
        router.middlewares.add(RequestObservationMiddleware(metrics: ServerMetrics()))
        let registry = try registry()
        router.group().add(middleware: BearerAPIKeyAuthenticator(registry: registry)).add(middleware: APIScopeRequirement(scope: .decrypt))
            .get("/scoped") { _, context -> String in context.identity?.name ?? "none" }
        router.group().add(middleware: BearerAPIKeyAuthenticator(registry: registry))
            .add(middleware: BasicAPIKeyAuthenticator(registry: registry))
            .get("/who") { _, context -> String in context.identity?.name ?? "none" }
        return router
    }

    static func basic(_ user: String, _ password: String, scheme: String = "Basic") -> String {
        "\(scheme) " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    func get(_ client: some TestClientProtocol, _ uri: String, authorization: String?) async throws -> (HTTPResponse.Status, String) {
        let headers: HTTPFields = authorization.map { [.authorization: $0] } ?? [:]
        return try await client.execute(uri: uri, method: .get, headers: headers) { ($0.status, String(buffer: $0.body)) }
    }

    @Test func theScopeRequirementAnswers401WithoutAValidKeyAnd403WithoutTheScope() async throws {
        try await Application(router: try Self.router()).test(.router) { client in
            let missing = try await get(client, "/scoped", authorization: nil)
            #expect(missing.0 == .unauthorized && missing.1.contains(#""code":"unauthorized""#) && missing.1.contains("Bearer KEY"))
            let wrong = try await get(client, "/scoped", authorization: "Bearer pw_not-a-key")
            #expect(wrong.0 == .unauthorized && wrong.1.contains("not valid"), "\(wrong)")
            // Basic is not chained on this route: a valid key sent that way identifies nobody here.
            let basic = try await get(client, "/scoped", authorization: Self.basic("decrypter", Self.decrypter.key))
            #expect(basic.0 == .unauthorized)
            let unscoped = try await get(client, "/scoped", authorization: "Bearer \(Self.redeemer.key)")
            #expect(unscoped.0 == .forbidden && unscoped.1.contains("lacks the decrypt scope"), "\(unscoped)")
            let allowed = try await get(client, "/scoped", authorization: "bearer \t\(Self.decrypter.key) ")
            #expect(allowed.0 == .ok && allowed.1 == "decrypter")
        }
    }

    @Test func bearerAndBasicAreChainedAndBasicMustNameTheKey() async throws {
        try await Application(router: try Self.router()).test(.router) { client in
            let cases: [(authorization: String?, identity: String)] = [
                ("Bearer \(Self.redeemer.key)", "redeemer"),
                (Self.basic("redeemer", Self.redeemer.key), "redeemer"),
                // The scheme in any case (RFC 9110 §11.1).
                (Self.basic("redeemer", Self.redeemer.key, scheme: "bAsIc"), "redeemer"),
                // The user must be the key's name: another key's name with this key identifies nobody.
                (Self.basic("decrypter", Self.redeemer.key), "none"),
                (Self.basic("redeemer", "pw_wrong"), "none"),
                ("Basic not-base64!", "none"),
                (nil, "none"),
            ]
            for (authorization, identity) in cases {
                let (status, body) = try await get(client, "/who", authorization: authorization)
                #expect(status == .ok && body == identity, "\(authorization ?? "no header"): \(body)")
            }
        }
    }
}
