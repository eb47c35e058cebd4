import ApplePay
import Foundation
import PaywardenServices
import ProcessorMessages
import Vault

/// eProtect's JSON reply, with the keys eProtect's server sends for a card post, and Paywarden's
/// stable code beside eProtect's response code when it is not a success.
struct EProtectReply: Encodable, Sendable {
    var paypageRegistrationId: String?
    var bin: String?
    var type: String?
    var firstSix: String?
    var lastFour: String?
    var litleTxnId: String
    var vantivTxnId: String
    var orderId: String?
    var id: String?
    var reportGroup: String?
    var response: String
    var message: String
    var responseTime: String
    var paywardenCode: String?
    var expiresAt: String?

    init(echo: EProtectForm.Echo, response: EProtectResponseCode, message: String, paywardenCode: StableCode?, now: Date) {
        let transaction = Self.transactionID()
        litleTxnId = transaction
        vantivTxnId = transaction
        orderId = echo.orderID
        id = echo.id
        reportGroup = echo.reportGroup
        self.response = response.rawValue
        self.message = message
        self.paywardenCode = paywardenCode?.rawValue
        responseTime = Self.responseTime(now)
    }

    init(registration: Registration, form: EProtectForm, now: Date) {
        self.init(
            echo: .init(id: form.id, orderID: form.orderID, reportGroup: form.reportGroup), response: .success, message: "Success",
            paywardenCode: nil, now: now)
        paypageRegistrationId = registration.id.value
        bin = registration.firstSix
        firstSix = registration.firstSix
        lastFour = registration.lastFour
        type = registration.network.rawValue
        expiresAt = RFC3339.string(from: registration.expiresAt)
    }

    /// A unique numeric transaction id (18 digits, no leading zero), as eProtect assigns.
    static func transactionID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(UInt64.random(in: 100_000_000_000_000_000...999_999_999_999_999_999, using: &generator))
    }

    /// `YYYY-MM-DD HH:MM:SS` in UTC, as eProtect writes it.
    static func responseTime(_ date: Date) -> String {
        // RFC 3339 is YYYY-MM-DDTHH:MM:SS…Z in UTC: eProtect's form is its first 19 characters with a space.
        String(RFC3339.string(from: date).prefix(19)).replacingOccurrences(of: "T", with: " ")
    }
}

/// eProtect's response codes (the eProtect JavaScript's map), and cnpAPI's token codes for the
/// token endpoints.
enum EProtectResponseCode: String, Sendable {
    case success = "870"
    case invalidRegistrationID = "877"
    case expiredRegistrationID = "878"
    case merchantNotAuthorized = "879"
    case reportGroupInvalid = "880"
    case signatureVerificationFailed = "888"
    case failure = "889"
    case invalidCardNumber = "820"
    case tokenNotFound = "822"
    case tokenInvalid = "823"

    /// The eProtect code for one of Paywarden's stable codes (cnpAPI's token codes for the token
    /// routes); 889, eProtect's failure, for everything eProtect has no word for.
    init(_ code: StableCode) {
        self =
            switch code {
            case .registrationNotFound: .invalidRegistrationID
            case .registrationExpired: .expiredRegistrationID
            case .merchantNotAuthorized: .merchantNotAuthorized
            case .reportGroupInvalid: .reportGroupInvalid
            case .signatureInvalid, .certificateChainInvalid, .signingTimeOutOfWindow: .signatureVerificationFailed
            case .invalidAccountNumber: .invalidCardNumber
            case .tokenNotFound: .tokenNotFound
            case .tokenUnlinked: .tokenInvalid
            case .malformedToken, .unsupportedVersion, .replayedTransaction, .unknownPublicKeyHash, .decryptionFailed, .unauthorized,
                .forbidden, .payloadTooLarge, .invalidRequest, .rateLimited, .requestTimeout, .tokenNotRecurringEligible,
                .cryptogramRequired, .authenticationResponsesInvalid, .submerchantRequired, .submerchantNotFound, .unknownMerchant,
                .validationURLRefused, .identityUnavailable, .appleRequestRefused,
                .appleResponseInvalid, .eventNotFound, .eventApplied, .eventBusy, .concurrentChange, .hsmUnavailable, .databaseUnavailable,
                .upstreamUnavailable, .overloaded, .internalError, .hsmCapabilityMissing:
                .failure
            case .webMerchantNotFound, .webMerchantDomainLimit, .webMerchantDomainTaken,
                .webMerchantDomainUnproven, .webMerchantDomainNotRegistered,
                .domainAssociationMissing,
                .platformIntegratorNotConfigured, .applePlatformUnauthorized, .applePlatformNotRegistered:
                .failure
            }
    }

    /// The code the eProtect endpoint answers: eProtect's own set (870–889), so a token-level code
    /// such as 820 becomes 889 there, with Paywarden's stable code beside it.
    init(eProtectFor code: StableCode) {
        let mapped = EProtectResponseCode(code)
        switch mapped {
        case .invalidCardNumber, .tokenNotFound, .tokenInvalid: self = .failure
        default: self = mapped
        }
    }

    /// eProtect's own words for the code.
    var message: String {
        switch self {
        case .success: "Success"
        case .invalidRegistrationID: "Invalid paypage registration id"
        case .expiredRegistrationID: "Expired paypage registration id"
        case .merchantNotAuthorized: "Merchant is not authorized for Paypage"
        case .reportGroupInvalid: "Report Group Invalid"
        case .signatureVerificationFailed: "Paypage Signature Verification Failed"
        case .failure: "Failure"
        case .invalidCardNumber: "Credit card number was invalid"
        case .tokenNotFound: "Token was not found"
        case .tokenInvalid: "Token is invalid"
        }
    }
}
