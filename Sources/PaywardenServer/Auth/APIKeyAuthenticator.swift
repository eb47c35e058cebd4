import Hummingbird

/// Requires `Authorization: Bearer KEY` with a configured key that has `scope`: 401 without a
/// valid key, 403 with a key that lacks the scope.
struct APIKeyAuthenticator: RouterMiddleware {
    typealias Context = PaywardenRequestContext

    let registry: APIKeyRegistry
    let scope: APIScope

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization], header.count > 7,
            header.prefix(7).lowercased() == "bearer "
        else { throw APIError.unauthorized("send an API key as Authorization: Bearer KEY") }
        guard let key = registry.authenticate(String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)) else {
            throw APIError.unauthorized("the API key is not valid")
        }
        guard key.scopes.contains(scope) else {
            throw APIError.forbidden("API key \(key.name) lacks the \(scope.rawValue) scope")
        }
        var context = context
        context.apiKey = key
        return try await next(request, context)
    }
}
