import HTTPTypes
import PaywardenServices
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
        case .forbidden(let message):
            self.init(.forbidden, message: message)
        case .vault(let error) where error.code == .recordUnreadable:
            self = .internalError
        case .vault(let error):
            self.init(StableCode(error.code), message: error.message)
        }
        eProtectCode = EProtectResponseCode(failure.code).rawValue
    }
}
