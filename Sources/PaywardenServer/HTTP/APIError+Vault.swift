import HTTPTypes
import Vault

extension APIError {
    /// The response for a failed vault request: the stable code with its HTTP status, and the
    /// eProtect or cnpAPI code in the body.
    init(_ failure: VaultFailure) {
        switch failure {
        case .token(let error):
            self.init(error)
        case .rateLimited(let wait, let who):
            self = EProtectController.rateLimited(wait, who)
        case .vault(let error):
            let status: HTTPResponse.Status =
                switch error.code {
                case .registrationNotFound, .tokenNotFound: .notFound
                case .registrationExpired, .tokenUnlinked: .gone
                case .merchantNotAuthorized, .reportGroupInvalid: .forbidden
                case .invalidAccountNumber, .tokenNotRecurringEligible, .cryptogramRequired: .unprocessableContent
                case .invalidRequest: .badRequest
                case .databaseUnavailable, .hsmUnavailable: .serviceUnavailable
                case .recordUnreadable: .internalServerError
                }
            if error.code == .recordUnreadable {
                self = .internalError
            } else if error.code == .hsmUnavailable {
                self.init(status, code: error.code.rawValue, message: Self.hsmUnavailableMessage, headers: [.retryAfter: "1"])
                detail = error.message
            } else {
                self.init(
                    status, code: error.code.rawValue, message: error.message,
                    headers: status == .serviceUnavailable ? [.retryAfter: "1"] : [:])
            }
        }
        eProtectCode = EProtectResponseCode(paywardenCode: failure.code).rawValue
    }
}
