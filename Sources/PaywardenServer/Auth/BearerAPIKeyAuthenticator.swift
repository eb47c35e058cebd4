import Hummingbird
import HummingbirdAuth
import PaywardenServices

/// Identifies the caller by `Authorization: Bearer KEY`: the configured key it names becomes the
/// request's identity. It only identifies (hummingbird-auth's ``AuthenticatorMiddleware``): a
/// request without a valid key goes on without one, and what needs one refuses it there
/// (``APIScopeRequirement`` on the JSON routes, each relay's controller in its own format).
struct BearerAPIKeyAuthenticator<Context: AuthRequestContext<APIKey>>: AuthenticatorMiddleware {
    let registry: APIKeyRegistry

    func authenticate(request: Request, context: Context) async throws -> APIKey? {
        guard let header = request.headers[.authorization], let presented = Self.bearerCredential(header) else { return nil }
        return registry.authenticate(presented)
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
