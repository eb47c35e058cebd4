import ApplePay
import Foundation
import HTTPTypes
import Hummingbird

/// An error response in Paywarden's stable shape: `{"error":{"code":"…","message":"…"}}`, with
/// extra fields where a protocol wants them (the eProtect code beside the stable one).
public struct APIError: Error, HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    public var headers: HTTPFields = [:]
    /// The eProtect or cnpAPI response code beside the stable one (vault routes).
    public var eProtectCode: String?
    /// What the caller is not told but the operator needs (which key, which return code): logged
    /// with the request's id, never sent.
    public var detail: String?

    public init(_ status: HTTPResponse.Status, code: String, message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    /// The response for a refused token: 400 for what cannot be read, 422 for what fails
    /// verification or decryption, 503 when the HSM or the database cannot serve it now.
    public init(_ error: PaymentTokenError) {
        switch error.code {
        case .malformedToken, .unsupportedVersion:
            self.init(.badRequest, code: error.code.rawValue, message: error.message)
        case .hsmUnavailable:
            self.init(.serviceUnavailable, code: error.code.rawValue, message: Self.hsmUnavailableMessage, headers: [.retryAfter: "1"])
            detail = error.message
        case .overloaded, .databaseUnavailable:
            self.init(.serviceUnavailable, code: error.code.rawValue, message: error.message, headers: [.retryAfter: "1"])
        case .merchantNotAuthorized:
            self.init(.forbidden, code: error.code.rawValue, message: error.message)
        default:
            self.init(.unprocessableContent, code: error.code.rawValue, message: error.message)
        }
    }

    /// The HSM's own words name key ids and PKCS#11 return codes: for the log, not for callers.
    static let hsmUnavailableMessage = "the HSM could not complete the operation; retry shortly"

    public static func unauthorized(_ message: String) -> APIError {
        APIError(.unauthorized, code: "unauthorized", message: message, headers: [.wwwAuthenticate: #"Bearer realm="paywarden""#])
    }

    public static func forbidden(_ message: String) -> APIError {
        APIError(.forbidden, code: "forbidden", message: message)
    }

    /// A failure that is no request's fault: the log line with the same request id says what it was.
    public static let internalError = APIError(
        .internalServerError, code: "internal_error", message: "the request failed inside Paywarden; the server log has the details"
    )

    public static func payloadTooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, code: "payload_too_large", message: "the body is larger than \(limit) bytes")
    }

    struct Body: Encodable {
        struct Detail: Encodable {
            let code: String
            let message: String
            let eProtectCode: String?
        }
        let error: Detail
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try JSONResponses.encoder.encode(
            Body(error: .init(code: code, message: message, eProtectCode: eProtectCode)), from: request, context: context)
        response.status = status
        response.headers.append(contentsOf: headers)
        return response
    }
}
