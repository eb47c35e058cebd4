import HTTPTypes
import OutboundTLS
import PaywardenStorage
import Vault

/// Why a merchant-token request (a notification, an unlink, a URL update, a payment session)
/// failed: a stable code, the status it is answered with, and a message without secrets.
public struct MerchantTokenFailure: Error, Sendable, CustomStringConvertible {
    let status: HTTPResponse.Status
    public let code: String
    public let message: String

    /// Whether trying again later may succeed (Apple, the HSM or the database unreachable).
    public var isTemporary: Bool { status == .serviceUnavailable }

    init(_ status: HTTPResponse.Status, code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// Apple's gateway or the call to it: the caller's mistakes are 4xx, Apple's refusals 502,
    /// what may pass (Apple or the HSM unreachable) 503 with Retry-After.
    init(_ error: AppleGatewayError) {
        let status: HTTPResponse.Status =
            switch error.code {
            case .validationURLRefused, .invalidRequest: .badRequest
            case .identityUnavailable: .conflict
            case .eventNotFound: .notFound
            case .appleRefused, .responseInvalid: .badGateway
            case .upstreamUnavailable, .hsmUnavailable: .serviceUnavailable
            }
        self.init(status, code: error.code.rawValue, error.message)
    }

    init(_ error: VaultError) {
        let status: HTTPResponse.Status =
            switch error.code {
            case .databaseUnavailable, .hsmUnavailable: .serviceUnavailable
            case .tokenNotFound, .registrationNotFound: .notFound
            case .merchantNotAuthorized: .forbidden
            case .recordUnreadable: .internalServerError
            default: .badRequest
            }
        self.init(status, code: error.code.rawValue, error.message)
    }

    init(_ error: StorageError) {
        // The driver's own words stay in the log; a client learns only that it may try again.
        self.init(.serviceUnavailable, code: "database_unavailable", "the database cannot be used now; try again shortly")
    }

    public var description: String { "\(code): \(message)" }
}
