import HTTPTypes

extension StableCode {
    /// The headers every format's refusal of this code carries: Retry-After for what may pass.
    public var retryHeaders: HTTPFields { category == .unavailable ? [.retryAfter: "1"] : [:] }

    /// What a caller is told: `message`, except where it would name what only the operator may
    /// see (the HSM's key ids and PKCS#11 return codes, an internal failure's files and rows),
    /// which get a fixed sentence while `message` goes to the log under the request's id.
    public func publicMessage(_ message: String) -> String {
        switch self {
        case .hsmUnavailable: "the HSM could not complete the operation; retry shortly"
        case .internalError: "the request failed inside Paywarden; the server log has the details"
        default: message
        }
    }

    /// The HTTP status each code is answered with, wherever it is answered over HTTP (an upstream's
    /// failure alone may be 502 or 504 instead: the relays' `UpstreamClient.Failure.status`).
    public var httpStatus: HTTPResponse.Status {
        switch self {
        case .malformedToken, .unsupportedVersion, .invalidRequest, .validationURLRefused: .badRequest
        case .unauthorized: .unauthorized
        case .forbidden, .merchantNotAuthorized, .reportGroupInvalid: .forbidden
        case .registrationNotFound, .tokenNotFound, .unknownMerchant, .eventNotFound: .notFound
        case .requestTimeout: .requestTimeout
        case .identityUnavailable, .eventApplied, .eventBusy, .concurrentChange: .conflict
        case .registrationExpired, .tokenUnlinked: .gone
        case .payloadTooLarge: .contentTooLarge
        case .signatureInvalid, .certificateChainInvalid, .signingTimeOutOfWindow, .replayedTransaction, .unknownPublicKeyHash,
            .decryptionFailed, .invalidAccountNumber, .tokenNotRecurringEligible, .cryptogramRequired,
            .authenticationResponsesInvalid, .submerchantRequired, .submerchantNotFound:
            .unprocessableContent
        case .rateLimited: .tooManyRequests
        case .internalError: .internalServerError
        // The server lacks what the request needs, for good: not 503, which clients retry.
        case .hsmCapabilityMissing: .notImplemented
        case .appleRequestRefused, .appleResponseInvalid: .badGateway
        case .hsmUnavailable, .databaseUnavailable, .upstreamUnavailable, .overloaded: .serviceUnavailable
        case .webMerchantNotFound: .notFound
        case .webMerchantDomainLimit: .unprocessableContent
        case .webMerchantDomainNotRegistered, .webMerchantDomainUnproven: .forbidden
        case .domainAssociationMissing, .platformIntegratorNotConfigured, .webMerchantDomainTaken: .conflict
        case .applePlatformUnauthorized, .applePlatformNotRegistered: .badGateway
        }
    }
}
