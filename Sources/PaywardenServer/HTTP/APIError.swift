import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import PaywardenServices

/// An error response in Paywarden's stable shape: `{"error":{"code":"…","message":"…"}}`, with
/// extra fields where a protocol wants them (the eProtect code beside the stable one).
public struct APIError: Error, HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    public let code: StableCode
    public let message: String
    public var headers: HTTPFields = [:]
    /// The eProtect or cnpAPI response code beside the stable one (vault routes).
    public var eProtectCode: String?
    /// What the caller is not told but the operator needs (which key, which return code): logged
    /// with the request's id, never sent.
    public var detail: String?

    public init(_ status: HTTPResponse.Status, code: StableCode, message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    /// `code` answered with its status (``StableCode/httpStatus``); what may pass gets Retry-After.
    /// The HSM's own words name key ids and PKCS#11 return codes, and an internal failure's name
    /// files and rows, so they go to the log (`detail`) and the caller gets a fixed sentence.
    public init(_ code: StableCode, message: String) {
        self.init(code.httpStatus, code: code, message: code.publicMessage(message), headers: code.retryHeaders)
        if code.publicMessage(message) != message { detail = message }
    }

    /// The response for a refused token: 400 for what cannot be read, 422 for what fails
    /// verification or decryption, 503 when the HSM or the database cannot serve it now.
    public init(_ error: PaymentTokenError) {
        self.init(StableCode(error.code), message: error.message)
    }

    public static func unauthorized(_ message: String) -> APIError {
        APIError(.unauthorized, code: .unauthorized, message: message, headers: [.wwwAuthenticate: #"Bearer realm="paywarden""#])
    }

    public static func forbidden(_ message: String) -> APIError {
        APIError(.forbidden, message: message)
    }

    /// A failure that is no request's fault: the log line with the same request id says what it was.
    public static let internalError = APIError(
        .internalServerError, code: .internalError, message: StableCode.internalError.publicMessage(""))

    public static func payloadTooLarge(limit: Int) -> APIError {
        APIError(.payloadTooLarge, message: "the body is larger than \(limit) bytes")
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
            Body(error: .init(code: code.rawValue, message: message, eProtectCode: eProtectCode)), from: request, context: context)
        response.status = status
        response.headers.append(contentsOf: headers)
        return response
    }
}
