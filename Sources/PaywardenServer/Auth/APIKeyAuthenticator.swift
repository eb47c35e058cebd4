import Hummingbird

/// Requires `Authorization: Bearer KEY` with a configured key that has `scope`: 401 without a
/// valid key, 403 with a key that lacks the scope.
struct APIKeyAuthenticator: RouterMiddleware {
    typealias Context = PaywardenRequestContext

    let registry: APIKeyRegistry
    let scope: APIScope

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization], let presented = Self.bearerCredential(header) else {
            throw APIError.unauthorized("send an API key as Authorization: Bearer KEY")
        }
        guard let key = registry.authenticate(presented) else {
            throw APIError.unauthorized("the API key is not valid")
        }
        guard key.scopes.contains(scope) else {
            throw APIError.forbidden("API key \(key.name) lacks the \(scope.rawValue) scope")
        }
        var context = context
        context.apiKey = key
        return try await next(request, context)
    }

    /// The credential of `Bearer CREDENTIAL` (the scheme in any case, RFC 9110 §11.1), without the
    /// spaces and tabs around it; nil for another scheme or an empty credential. Byte by byte:
    /// Foundation's trimming cost more than the key's hash on every request.
    static func bearerCredential(_ header: String) -> Substring? {
        let utf8 = header.utf8
        let lowercased = { (byte: UInt8) in (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
        guard utf8.count > 7, utf8.prefix(7).elementsEqual("bearer ".utf8, by: { lowercased($0) == $1 }) else { return nil }
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        var start = utf8.index(utf8.startIndex, offsetBy: 7)
        var end = utf8.endIndex
        while start < end, isSpace(utf8[start]) { start = utf8.index(after: start) }
        while end > start, isSpace(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
        guard start < end else { return nil }
        return header[start..<end]
    }
}
