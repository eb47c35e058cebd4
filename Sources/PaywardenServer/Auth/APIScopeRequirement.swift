import Hummingbird
import PaywardenServices

/// Authorisation for the JSON routes, apart from authentication: the request's identity (set by
/// an authenticator before it) must be an API key with `scope`. 401 without one, saying whether
/// a key was sent at all; 403 for a key without the scope.
struct APIScopeRequirement: RouterMiddleware {
    typealias Context = PaywardenRequestContext

    let scope: APIScope

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let key = context.identity else {
            throw APIError.unauthorized(
                request.headers[.authorization] == nil ? "send an API key as Authorization: Bearer KEY" : "the API key is not valid")
        }
        guard key.scopes.contains(scope) else {
            throw APIError.forbidden("API key \(key.name) lacks the \(scope.rawValue) scope")
        }
        return try await next(request, context)
    }
}

extension RouterMethods where Context == PaywardenRequestContext {
    /// Routes under `path` for a bearer API key with `scope`: the authenticator identifies, the
    /// requirement authorises (401 without a valid key, 403 without the scope).
    func keyed(_ path: RouterPath, scope: APIScope, _ keys: APIKeyRegistry) -> RouterGroup<Context> {
        group(path).add(middleware: BearerAPIKeyAuthenticator(registry: keys)).add(middleware: APIScopeRequirement(scope: scope))
    }
}
