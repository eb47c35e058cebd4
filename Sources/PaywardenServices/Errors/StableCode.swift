import ApplePay
import OutboundTLS
import Vault

/// Paywarden's stable error codes: what every error body, eProtect and cnpAPI reply, MercuryPay
/// `PaywardenErrorCode` and Radial `Description` names, and what metrics and audit lines count.
/// openapi.json's `StableCode` lists those the JSON routes answer; the relays add their own.
///
/// Each protocol maps these exhaustively in one place (the server's `APIError` for HTTP and
/// `EProtectResponseCode` for eProtect, `CnpTokenResponseCode` and `CnpLocalDecline` for cnpAPI,
/// the MercuryPay and Radial relays),
/// so a new code cannot reach a client unmapped, and no code is ever matched as a string.
public enum StableCode: String, Sendable, Hashable, CaseIterable {
    // The token (ApplePay's PaymentTokenError)
    case malformedToken = "malformed_token"
    case unsupportedVersion = "unsupported_version"
    case signatureInvalid = "signature_invalid"
    case certificateChainInvalid = "certificate_chain_invalid"
    case signingTimeOutOfWindow = "signing_time_out_of_window"
    case replayedTransaction = "replayed_transaction"
    case unknownPublicKeyHash = "unknown_public_key_hash"
    case decryptionFailed = "decryption_failed"
    case authenticationResponsesInvalid = "authentication_responses_invalid"
    // The caller
    case unauthorized
    case forbidden
    case payloadTooLarge = "payload_too_large"
    case invalidRequest = "invalid_request"
    case rateLimited = "rate_limited"
    case requestTimeout = "request_timeout"
    case merchantNotAuthorized = "merchant_not_authorized"
    // The vault (Vault's VaultError)
    case reportGroupInvalid = "report_group_invalid"
    case invalidAccountNumber = "invalid_account_number"
    case registrationNotFound = "registration_not_found"
    case registrationExpired = "registration_expired"
    case tokenNotFound = "token_not_found"
    case tokenUnlinked = "token_unlinked"
    case tokenNotRecurringEligible = "token_not_recurring_eligible"
    case cryptogramRequired = "cryptogram_required"
    case submerchantRequired = "submerchant_required"
    case submerchantNotFound = "submerchant_not_found"
    // Merchant tokens and Apple's gateway (OutboundTLS's AppleGatewayError)
    case unknownMerchant = "unknown_merchant"
    case validationURLRefused = "validation_url_refused"
    case identityUnavailable = "identity_unavailable"
    case appleRequestRefused = "apple_request_refused"
    case appleResponseInvalid = "apple_response_invalid"
    case eventNotFound = "event_not_found"
    case eventApplied = "event_applied"
    case eventBusy = "event_busy"
    // Any record written by a compare-and-set
    /// Another request changed what this one read, and this one wrote nothing: repeat it.
    case concurrentChange = "concurrent_change"
    // Paywarden or what it depends on
    case hsmUnavailable = "hsm_unavailable"
    /// The HSM cannot run the key operation the token's version needs (no path passed the
    /// capability probe): permanent until the HSM or the settings change, so no Retry-After.
    case hsmCapabilityMissing = "hsm_capability_missing"
    case databaseUnavailable = "database_unavailable"
    case upstreamUnavailable = "upstream_unavailable"
    case overloaded
    case internalError = "internal_error"
    // Web merchants (the platform integrator's registrations with Apple)
    case webMerchantNotFound = "web_merchant_not_found"
    case webMerchantDomainLimit = "web_merchant_domain_limit"
    /// A domain another organisation holds, or another web merchant has registered.
    case webMerchantDomainTaken = "web_merchant_domain_taken"
    /// A domain the organisation has not proved it controls (nor an admin given it).
    case webMerchantDomainUnproven = "web_merchant_domain_unproven"
    case webMerchantDomainNotRegistered = "web_merchant_domain_not_registered"
    case domainAssociationMissing = "domain_association_missing"
    case platformIntegratorNotConfigured = "platform_integrator_not_configured"
    case applePlatformUnauthorized = "apple_platform_unauthorized"
    case applePlatformNotRegistered = "apple_platform_not_registered"

    /// What the caller can do about it, as ``PKCS11Error``'s category tells the HSM layer.
    public enum Category: String, Sendable, Hashable {
        /// The request or what it names is at fault: answer it, and a retry of the same cannot help.
        case refused
        /// Paywarden or something it depends on cannot serve now: answer 503 (or 504), retry later.
        case unavailable
        /// Nobody's request: answer 500 and tell the operator.
        case failure
    }

    public var category: Category {
        switch self {
        case .hsmUnavailable, .databaseUnavailable, .upstreamUnavailable, .overloaded: .unavailable
        case .internalError: .failure
        // identity_unavailable waits for an admin to import a certificate, not for time to pass.
        case .malformedToken, .unsupportedVersion, .signatureInvalid, .certificateChainInvalid, .signingTimeOutOfWindow,
            .replayedTransaction, .unknownPublicKeyHash, .decryptionFailed, .unauthorized, .forbidden, .payloadTooLarge,
            .invalidRequest, .rateLimited, .requestTimeout, .merchantNotAuthorized, .reportGroupInvalid, .invalidAccountNumber,
            .registrationNotFound, .registrationExpired, .tokenNotFound, .tokenUnlinked, .tokenNotRecurringEligible,
            .cryptogramRequired, .authenticationResponsesInvalid, .submerchantRequired, .submerchantNotFound, .unknownMerchant,
            .validationURLRefused, .identityUnavailable, .appleRequestRefused,
            .appleResponseInvalid, .eventNotFound, .eventApplied, .eventBusy, .concurrentChange:
            .refused
        // Not the request's fault, but no retry of it helps either: only the operator can.
        case .hsmCapabilityMissing: .refused
        case .webMerchantNotFound, .webMerchantDomainLimit, .webMerchantDomainTaken, .webMerchantDomainUnproven,
            .webMerchantDomainNotRegistered, .domainAssociationMissing,
            .platformIntegratorNotConfigured, .applePlatformUnauthorized, .applePlatformNotRegistered:
            .refused
        }
    }

    public init(_ code: PaymentTokenError.Code) {
        self =
            switch code {
            case .malformedToken: .malformedToken
            case .unsupportedVersion: .unsupportedVersion
            case .signatureInvalid: .signatureInvalid
            case .certificateChainInvalid: .certificateChainInvalid
            case .signingTimeOutOfWindow: .signingTimeOutOfWindow
            case .replayedTransaction: .replayedTransaction
            case .unknownPublicKeyHash: .unknownPublicKeyHash
            case .decryptionFailed: .decryptionFailed
            case .hsmUnavailable: .hsmUnavailable
            case .hsmCapabilityMissing: .hsmCapabilityMissing
            case .overloaded: .overloaded
            case .databaseUnavailable: .databaseUnavailable
            case .merchantNotAuthorized: .merchantNotAuthorized
            case .authenticationResponsesInvalid: .authenticationResponsesInvalid
            }
    }

    public init(_ code: VaultError.Code) {
        self =
            switch code {
            case .registrationNotFound: .registrationNotFound
            case .registrationExpired: .registrationExpired
            case .tokenNotFound: .tokenNotFound
            case .tokenUnlinked: .tokenUnlinked
            case .tokenNotRecurringEligible: .tokenNotRecurringEligible
            case .cryptogramRequired: .cryptogramRequired
            case .submerchantRequired: .submerchantRequired
            case .submerchantNotFound: .submerchantNotFound
            case .merchantNotAuthorized: .merchantNotAuthorized
            case .reportGroupInvalid: .reportGroupInvalid
            case .invalidAccountNumber: .invalidAccountNumber
            case .invalidRequest: .invalidRequest
            case .databaseUnavailable: .databaseUnavailable
            case .hsmUnavailable: .hsmUnavailable
            case .hsmCapabilityMissing: .hsmCapabilityMissing
            case .recordUnreadable: .internalError
            }
    }

    public init(_ code: AppleGatewayError.Code) {
        self =
            switch code {
            case .validationURLRefused: .validationURLRefused
            case .invalidRequest: .invalidRequest
            case .identityUnavailable: .identityUnavailable
            case .upstreamUnavailable: .upstreamUnavailable
            case .appleRefused: .appleRequestRefused
            case .eventNotFound: .eventNotFound
            case .responseInvalid: .appleResponseInvalid
            case .hsmUnavailable: .hsmUnavailable
            case .platformUnauthorized: .applePlatformUnauthorized
            case .platformNotRegistered: .applePlatformNotRegistered
            }
    }
}
