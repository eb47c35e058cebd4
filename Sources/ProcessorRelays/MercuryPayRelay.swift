import Foundation
import HTTPTypes
import Logging
import PaywardenPrimitives
import PaywardenServices
import ProcessorMessages
import Vault

/// The MercuryPay relay (docs/processors.md, "MercuryPay"): a `SaleByRecordNo` or `AuthorizeByRecordNo` whose
/// `RecordNo` is a registration ID (`TokenType` RegistrationID or RegistrationId) or a high-value
/// token (`OmniToken`) goes to the upstream once as MercuryPay's keyed sale or pre-authorization,
/// `AcctNo` and `ExpDate` in place of `RecordNo` and `TokenType`; an approval comes back with the
/// high-value token in `RecordNo` and `AcctNo` masked, a decline or error with no `RecordNo`.
///
/// A registration ID is ended before the request leaves, as in the cnpAPI relay: one cryptogram,
/// one authorization, and a resend is refused here. Its cryptogram and ECI go to the fields the
/// operator names (`relay_mercurypay_cryptogram_field`, `…_eci_field`), because MercuryPay's public
/// material documents none; without a cryptogram field, registration IDs are refused (a device
/// account number is not sent without its cryptogram). An OmniToken is detokenized (audited, and
/// with the `detokenize` scope its own route needs) and carries no cryptogram; ``StoredCredentialRule``
/// decides first, on the token's record, whether its kind may serve the request's `Frequency` (a
/// DPAN's token is refused for Recurring, `token_not_recurring_eligible`, 422).
///
/// Every request goes on the one configured merchant's credentials, so only the organisations
/// bound to it (`relay_mercurypay_organizations`) may relay.
///
/// Credentials: the client's Basic or Bearer credentials are its Paywarden API key and never
/// leave; the upstream gets the configured merchant ID and password as HTTP Basic, or no
/// Authorization header.
///
/// Refusals use MercuryPay's error shape (`CmdStatus` Error) with the documented `DSIXReturnCode`
/// where one fits (004117 merchant not set up for tokens, 004118 decryption service unavailable,
/// 004119 token service unavailable), Paywarden's stable code in `PaywardenErrorCode`, and the
/// HTTP status of the same refusal on Paywarden's own API. Upstream failures are 503 (nothing
/// sent), 504 (no answer in time: outcome unknown) or 502; nothing is retried.
public struct MercuryPayRelay: Sendable {
    /// Where the card data comes from: registration IDs and stored tokens.
    let intake: CardIntake
    let upstream: any ProcessorUpstream
    let fields: MercuryPayForwarding.Options
    /// The organisations bound to the upstream's merchant.
    let organizations: Set<OrganizationID>

    public init(
        service: VaultService, upstream: any ProcessorUpstream, fields: MercuryPayForwarding.Options, organizations: Set<OrganizationID>
    ) {
        intake = CardIntake(service: service, form: Self.form)
        self.upstream = upstream
        self.fields = fields
        self.organizations = organizations
    }

    /// MercuryPay's keyed sale: the fields the operator names carry a cryptogram (`relay_mercurypay_cryptogram_field`).
    public static let form = CardIntake.Form(name: "the MercuryPay upstream")

    public struct Reply: Sendable {
        public var body: ProcessorJSON
        public var status: HTTPResponse.Status = .ok
        public var headers: HTTPFields = [:]
    }

    /// `submerchant`: the request's `Paywarden-Submerchant` header, for a multi-merchant payment.
    public func relay(
        _ request: MercuryPayRequest, key: APIKey, organization: OrganizationID, submerchant: SubmerchantChoice? = nil
    ) async -> Reply {
        // One merchant's credentials serve every request: only the organisations bound to it use them.
        guard organizations.contains(organization) else {
            return refusal(
                .vault(VaultError(.merchantNotAuthorized, "the organisation is not bound to the MercuryPay upstream's merchant")),
                invoiceNo: request.invoiceNo)
        }
        let card: ForwardedCardData
        let token: String
        do throws(VaultFailure) {
            switch request.tokenType {
            case .registrationID:
                // A device account number authorizes with its cryptogram or not at all: without a field
                // for it upstream, nothing is redeemed.
                guard fields.cryptogramField != nil else {
                    throw .vault(
                        VaultError(
                            .merchantNotAuthorized,
                            "the MercuryPay upstream takes no cryptogram (relay_mercurypay_cryptogram_field is unset), and a device "
                                + "account number is not sent without it"))
                }
                // One cryptogram, one authorization: the registration ends before anything is sent.
                let (issued, redeemed) = try await intake.registration(
                    PresentedRegistrationID(request.recordNo), key: key, organization: organization, submerchant: submerchant)
                card = redeemed
                token = issued.token
            case .omniToken:
                // A recurring sale on a DPAN's token is refused on the token's record, before it is detokenized.
                let use = Self.storedCredentialUse(request)
                card = try await intake.storedToken(
                    request.recordNo, key: key, organization: organization, use: use, submerchant: submerchant)
                token = request.recordNo
            }
        } catch {
            return refusal(error, invoiceNo: request.invoiceNo)
        }
        return await forward(request, card: card, token: token)
    }

    /// `Frequency` Recurring is a merchant-initiated series (MercuryPay's recurring flag); OneTime a
    /// payment the cardholder starts.
    public static func storedCredentialUse(_ request: MercuryPayRequest) -> StoredCredentialUse {
        switch request.frequency {
        case .oneTime: .customerInitiated
        case .recurring: .merchantInitiated(indicator: "Frequency Recurring")
        }
    }

    private func forward(_ request: MercuryPayRequest, card: ForwardedCardData, token: String) async -> Reply {
        let forwarded = MercuryPayForwarding.upstreamRequest(request, card: card, options: fields)
        var headers: [(String, String)] = [("Accept", "application/json")]
        if let credentials = upstream.configuration.credentials {
            let basic = Data("\(credentials.user):\(credentials.password.revealed)".utf8).base64EncodedString()
            headers.append(("Authorization", "Basic \(basic)"))
        }
        do throws(UpstreamClient.Failure) {
            let body = try await upstream.exchange(
                forwarded.path, body: forwarded.body.serialized(), contentType: "application/json", headers: headers
            ) { body throws(ProcessorMessageError) in
                try MercuryPayResponseRewriter.clientResponse(body, token: token, forwarded: card)
            }
            return Reply(body: body)
        } catch {
            return Self.upstreamFailure(error, invoiceNo: request.invoiceNo)
        }
    }

    /// A registration ID or token that cannot be used, or a vault that cannot answer.
    public func refusal(_ failure: VaultFailure, invoiceNo: String?) -> Reply {
        let code = failure.code
        let documented: MercuryPayErrorResponse.TokenError? =
            switch code {
            case .merchantNotAuthorized: .merchantNotSetUpForTokens
            case .hsmUnavailable: .decryptionServiceUnavailable
            case .databaseUnavailable, .overloaded: .tokenServiceUnavailable
            // MercuryPay documents no return code for these: the stable code says what happened.
            case .malformedToken, .unsupportedVersion, .signatureInvalid, .certificateChainInvalid, .signingTimeOutOfWindow,
                .replayedTransaction, .unknownPublicKeyHash, .decryptionFailed, .unauthorized, .forbidden, .payloadTooLarge,
                .invalidRequest, .rateLimited, .requestTimeout, .reportGroupInvalid, .invalidAccountNumber, .registrationNotFound,
                .registrationExpired, .tokenNotFound, .tokenUnlinked, .tokenNotRecurringEligible, .cryptogramRequired,
                .authenticationResponsesInvalid,
                .submerchantRequired, .submerchantNotFound, .unknownMerchant,
                .validationURLRefused, .identityUnavailable, .appleRequestRefused, .appleResponseInvalid, .eventNotFound, .eventApplied,
                .eventBusy, .concurrentChange, .upstreamUnavailable, .internalError, .hsmCapabilityMissing:
                nil
            case .webMerchantNotFound, .webMerchantDomainLimit, .webMerchantDomainTaken,
                .webMerchantDomainUnproven, .webMerchantDomainNotRegistered,
                .domainAssociationMissing,
                .platformIntegratorNotConfigured, .applePlatformUnauthorized, .applePlatformNotRegistered:
                nil
            }
        let message = failure.publicMessage(logging: intake.logger, "a MercuryPay request was refused")
        let body = MercuryPayErrorResponse.body(
            returnCode: documented?.rawValue, textResponse: documented.map { "\($0.textResponse): \(message)" } ?? message,
            invoiceNo: invoiceNo, paywardenCode: code.rawValue)
        return Reply(body: body, status: code.httpStatus, headers: code.retryHeaders)
    }

    public static func upstreamFailure(_ failure: UpstreamClient.Failure, invoiceNo: String?) -> Reply {
        let body = MercuryPayErrorResponse.body(
            returnCode: nil, textResponse: failure.explanation, invoiceNo: invoiceNo, paywardenCode: StableCode.upstreamUnavailable.rawValue
        )
        // No Retry-After: the registration ID or token was spent on this attempt.
        return Reply(body: body, status: failure.status)
    }
}
