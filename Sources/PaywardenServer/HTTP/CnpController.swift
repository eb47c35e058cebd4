import ApplePay
import Foundation
import Hummingbird
import NIOCore
import PaywardenPrimitives
import PaywardenServices
import ProcessorMessages
import ProcessorRelays
import Vault

/// `POST /vap/communicator/online` (and `/cnpAPI`): cnpAPI XML in either namespace. A
/// `registerTokenRequest`, with a paypage registration ID or an Apple Pay token, is answered here
/// with a `registerTokenResponse` in the request's namespace; every other transaction goes to the
/// configured upstream through ``CnpRelay`` (an `authorization` or `sale` with its paypage or
/// applepay replaced by the card data), and is refused when none is configured. The XML parser
/// refuses DTDs, entities and processing instructions and caps size, depth and element counts.
///
/// Authentication: `<authentication>` carries the API key's name as `user` and the key itself
/// as `password`; an `Authorization: Bearer` header, when sent, must be the same key. The key
/// needs the `redeem` scope and acts for its organisation.
struct CnpController {
    /// Where registrations' card data comes from: registration IDs and Apple Pay tokens.
    let intake: CardIntake
    let registry: APIKeyRegistry
    let maxBodyBytes: Int
    /// The cnpAPI upstream, when one is configured.
    let relay: CnpRelay?

    func online(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let body = try await RequestBody.collect(request, limit: maxBodyBytes)
        let parsed: CnpOnlineRequest
        do throws(ProcessorMessageError) {
            parsed = try CnpOnlineRequest.parse(body)
        } catch {
            return Self.xml(CnpOnlineResponse.errorEnvelope(answering: body, refusing: error))
        }
        guard let key = authenticate(parsed, context: context, header: request.headers[.authorization]), key.scopes.contains(.redeem),
            let organization = key.organization
        else {
            return Self.xml(CnpOnlineResponse.errorEnvelope(dialect: parsed.dialect, version: parsed.version, status: .invalidCredentials))
        }
        guard case .registerToken(let registration) = parsed.transaction else {
            guard let relay else {
                let status = CnpEnvelopeStatus.schemaValidationFailed(
                    "Paywarden answers registerTokenRequest here; \(parsed.transaction.name) needs a configured upstream, and none is")
                return Self.xml(CnpOnlineResponse.errorEnvelope(dialect: parsed.dialect, version: parsed.version, status: status))
            }
            let submerchant: SubmerchantChoice?
            do throws(VaultFailure) {
                submerchant = try SubmerchantChoice(request.headers)
            } catch {
                return Self.xml(CnpRelay.refused(parsed, error.message).document)
            }
            let reply = await relay.relay(parsed, key: key, organization: organization, submerchant: submerchant)
            return Self.xml(reply.document, status: reply.status)
        }
        let response = await register(registration, key: key, organization: organization)
        return Self.xml(
            CnpOnlineResponse.envelope(dialect: parsed.dialect, version: parsed.version, transactions: [response.element(parsed.dialect)]))
    }

    private func register(_ registration: CnpRegisterTokenRequest, key: APIKey, organization: OrganizationID) async
        -> CnpRegisterTokenResponse
    {
        var response = CnpRegisterTokenResponse(
            attributes: registration.attributes, transactionId: CnpRelay.transactionID(), response: .registrationError,
            responseTime: intake.now
        )
        do throws(VaultFailure) {
            let issued: IssuedToken
            switch registration.source {
            case .paypageRegistrationId(let id):
                issued = try await intake.registrationRedeemed(PresentedRegistrationID(id), key: key, organization: organization)
            case .applePay(let token):
                let payment: DecryptedPayment?
                (issued, payment) = try await intake.paymentRegistered(Array(token.paymentDataJSON), organization: organization)
                response.applePay = CnpApplePayResponse(payment)
            }
            response.response = issued.isNew ? .registered : .previouslyRegistered
            response.token = issued.token
            response.bin = issued.firstSix
            response.type = issued.network.rawValue.isEmpty ? nil : issued.network.rawValue
        } catch {
            response.response = Self.responseCode(error)
        }
        return response
    }

    /// The last authenticator of the chain, the one in the body: the key `<authentication>` names,
    /// when its password is that key; and when an Authorization header was sent, the key the
    /// Bearer authenticator found in it must be the same one (a header it could not read refuses).
    private func authenticate(_ request: CnpOnlineRequest, context: PaywardenRequestContext, header: String?) -> APIKey? {
        guard let key = registry.authenticate(request.password), key.name == request.user else { return nil }
        if header != nil, context.identity?.name != key.name { return nil }
        return key
    }

    /// cnpAPI's token codes, with eProtect's for registration IDs; the reason after the words.
    static func responseCode(_ failure: VaultFailure) -> CnpTokenResponseCode {
        let base: CnpTokenResponseCode =
            switch failure.code {
            case .registrationNotFound: CnpTokenResponseCode(code: "877", message: "Invalid paypage registration id")
            case .registrationExpired: CnpTokenResponseCode(code: "878", message: "Expired paypage registration id")
            case .invalidAccountNumber: .invalidAccountNumber
            case .merchantNotAuthorized: .merchantNotAuthorized
            case .malformedToken, .unsupportedVersion, .signatureInvalid, .certificateChainInvalid, .signingTimeOutOfWindow,
                .replayedTransaction, .unknownPublicKeyHash, .decryptionFailed, .unauthorized, .forbidden, .payloadTooLarge,
                .invalidRequest, .rateLimited, .requestTimeout, .reportGroupInvalid, .tokenNotFound, .tokenUnlinked,
                .tokenNotRecurringEligible, .cryptogramRequired, .authenticationResponsesInvalid, .submerchantRequired,
                .submerchantNotFound, .unknownMerchant, .validationURLRefused, .identityUnavailable,
                .appleRequestRefused, .appleResponseInvalid, .eventNotFound, .eventApplied, .eventBusy, .concurrentChange, .hsmUnavailable,
                .databaseUnavailable, .upstreamUnavailable, .overloaded, .internalError, .hsmCapabilityMissing:
                .registrationError
            case .webMerchantNotFound, .webMerchantDomainLimit, .webMerchantDomainTaken,
                .webMerchantDomainUnproven, .webMerchantDomainNotRegistered,
                .domainAssociationMissing,
                .platformIntegratorNotConfigured, .applePlatformUnauthorized, .applePlatformNotRegistered:
                .registrationError
            }
        return CnpTokenResponseCode(code: base.code, message: "\(base.message) (\(failure.code.rawValue))")
    }

    static func xml(_ document: ProcessorXML.Document, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/xml; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: ProcessorXML.serialize(document))))
    }
}

extension CnpController {
    /// cnpAPI's endpoint at Worldpay's path and at `/cnpAPI`. The format answers a missing or wrong
    /// key in its own shape: the bearer authenticator identifies, and ``online(_:context:)`` authorises.
    var routes: RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.group().add(middleware: BearerAPIKeyAuthenticator(registry: registry))
            .post("/vap/communicator/online", use: online)
            .post("/cnpAPI", use: online)
        return routes
    }
}
