import Foundation
import Hummingbird
import HummingbirdAuth
import PaywardenServices

/// Identifies the caller by HTTP Basic: the user is the API key's name and the password the key
/// (MercuryPay's clients send their merchant credentials this way). Chained after
/// ``BearerAPIKeyAuthenticator``, it adds nothing when that one already identified the caller.
///
/// The header is read here rather than with hummingbird-auth's `headers.basic`, which takes the
/// scheme in one spelling only: RFC 9110 §11.1 makes it case-insensitive, and the credentials
/// must be UTF-8 exactly, never decoded lossily into a name that then matches another.
struct BasicAPIKeyAuthenticator<Context: AuthRequestContext<APIKey>>: AuthenticatorMiddleware {
    let registry: APIKeyRegistry

    func authenticate(request: Request, context: Context) async throws -> APIKey? {
        guard context.identity == nil, let header = request.headers[.authorization], let space = header.firstIndex(of: " "),
            header[..<space].lowercased() == "basic"
        else { return nil }
        let encoded = header[space...].trimmingCharacters(in: .whitespaces)
        guard let decoded = Data(base64Encoded: encoded).flatMap({ String(data: $0, encoding: .utf8) }),
            let colon = decoded.firstIndex(of: ":"),
            let key = registry.authenticate(decoded[decoded.index(after: colon)...]), key.name == decoded[..<colon]
        else { return nil }
        return key
    }
}
