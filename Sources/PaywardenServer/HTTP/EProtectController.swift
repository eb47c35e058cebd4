import Foundation
import Hummingbird
import NIOCore
import PaywardenServices
import ProcessorMessages
import Vault

/// `POST /eProtect/paypage`: a mobile app's Apple Pay token in eProtect's form fields, a
/// registration ID out. No API key: the app names its merchant by `paypageId`, and each paypage
/// and each client address is rate-limited. The client is the peer, or behind a trusted reverse
/// proxy the address it forwards; a paypage is charged only for tokens that spent their
/// transaction id for one of its merchants.
/// eProtect outcomes are HTTP 200 with the code in `response`, as the real service answers.
struct EProtectController {
    let service: VaultService
    let perPaypage: RateLimiter
    let perAddress: RateLimiter
    let clients: ClientAddressResolver
    let maxBodyBytes: Int

    func register(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let client = clients.clientAddress(peer: context.remoteAddress, forwardedFor: request.headers[values: .xForwardedFor])
        if let wait = perAddress.acquire(ClientAddressResolver.limitKey(client)) { throw Self.rateLimited(wait, "this client address") }
        let body = try await RequestBody.collect(request, limit: maxBodyBytes)
        let now = service.now
        let form: EProtectForm
        do throws(EProtectForm.Refusal) {
            form = try EProtectForm(body: body)
        } catch {
            let code = EProtectResponseCode.failure
            return try reply(
                EProtectReply(
                    echo: error.partial, response: code, message: "\(code.message): \(error.message)", paywardenCode: .malformedToken,
                    now: now))
        }
        let echo = EProtectForm.Echo(id: form.id, orderID: form.orderID, reportGroup: form.reportGroup)
        let outcome: EProtectReply
        do throws(VaultFailure) {
            // Looked at per paypage only once the paypage is known to exist, so made-up ids cannot fill
            // the limiter, and charged only for a token that spent its transaction id for one of the
            // paypage's merchants, so made-up forms and replays cannot drain it. Every such token is
            // charged, even past the look, so concurrent ones cannot slip through together.
            let registration = try await service.register(
                token: form.tokenJSON, paypageID: form.paypageID, reportGroup: form.reportGroup,
                admit: { paypage throws(VaultFailure) in
                    if let wait = perPaypage.wait(paypage.id) { throw .rateLimited(wait, "this paypageId") }
                },
                claimed: { paypage in perPaypage.charge(paypage.id) })
            outcome = EProtectReply(registration: registration, form: form, now: now)
        } catch {
            if case .rateLimited(let wait, let who) = error { throw Self.rateLimited(wait, who) }
            let code = EProtectResponseCode(eProtectFor: error.code)
            // eProtect's words first, then a fixed sentence for Paywarden's code: the caller is
            // anonymous, and the verifier's or the HSM's words name files, keys and return codes.
            // The log has them, under the request's id.
            context.logger.notice("registration refused", metadata: ["code": "\(error.code.rawValue)", "detail": "\(error.message)"])
            outcome = EProtectReply(
                echo: echo, response: code, message: "\(code.message): \(Self.reason(error.code))", paywardenCode: error.code, now: now)
        }
        return try reply(outcome)
    }

    /// What an anonymous caller is told for each refusal: the code's meaning, never its detail.
    static func reason(_ code: StableCode) -> String {
        switch code {
        case .merchantNotAuthorized: "the paypageId is unknown or disabled, or the token is for a merchant it does not use"
        case .reportGroupInvalid: "the reportGroup is not one this paypage allows"
        case .malformedToken, .unsupportedVersion: "the token could not be read"
        case .signatureInvalid: "the token's signature does not verify"
        case .certificateChainInvalid: "the token's signing certificates do not lead to Apple's root"
        case .signingTimeOutOfWindow: "the token was signed too long ago, or in the future"
        case .replayedTransaction: "the token was used before"
        case .unknownPublicKeyHash: "the token is not encrypted to a key of this service"
        case .decryptionFailed: "the token could not be decrypted"
        case .invalidAccountNumber: "the token carries no usable account number"
        case .authenticationResponsesInvalid: "the token's multi-merchant authentication responses are not usable"
        case .hsmCapabilityMissing: "Paywarden's HSM cannot process this token; retrying will not help"
        // Registration asks nothing else of the caller: the rest is Paywarden's (or its HSM's or
        // database's) to fix, and the anonymous caller is told only to retry.
        case .unauthorized, .forbidden, .payloadTooLarge, .invalidRequest, .rateLimited, .requestTimeout, .registrationNotFound,
            .registrationExpired, .tokenNotFound, .tokenUnlinked, .tokenNotRecurringEligible, .cryptogramRequired, .submerchantRequired,
            .submerchantNotFound, .unknownMerchant,
            .validationURLRefused, .identityUnavailable, .appleRequestRefused, .appleResponseInvalid, .eventNotFound, .eventApplied,
            .eventBusy, .concurrentChange, .hsmUnavailable, .databaseUnavailable, .upstreamUnavailable, .overloaded, .internalError:
            "Paywarden cannot register tokens right now; retry shortly"
        case .webMerchantNotFound, .webMerchantDomainLimit, .webMerchantDomainTaken,
            .webMerchantDomainUnproven, .webMerchantDomainNotRegistered,
            .domainAssociationMissing,
            .platformIntegratorNotConfigured, .applePlatformUnauthorized, .applePlatformNotRegistered:
            "Paywarden cannot register tokens right now; retry shortly"
        }
    }

    private func reply(_ reply: EProtectReply) throws -> Response {
        let body = try JSONResponses.encoder.encode(reply)
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// 429 with `Retry-After` in whole seconds (at least 1).
    static func rateLimited(_ wait: Duration, _ who: String) -> APIError {
        let seconds = max(1, Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0))
        return APIError(
            .tooManyRequests, code: .rateLimited, message: "too many registrations from \(who); retry after \(seconds) s",
            headers: [.retryAfter: String(seconds)])
    }
}

extension EProtectController {
    /// `POST /eProtect/paypage`: no API key (a buyer's browser or app posts it); the paypage and
    /// the rate limits admit it.
    var routes: RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.post("/eProtect/paypage", use: register)
        return routes
    }
}
