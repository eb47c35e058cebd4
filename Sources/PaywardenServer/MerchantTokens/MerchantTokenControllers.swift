import Foundation
import HTTPTypes
import Hummingbird
import MerchantTokens
import OutboundTLS
import PaywardenPrimitives
import PaywardenServices
import PaywardenStorage

/// Apple's merchant-token notification: `GET /v1/apple-pay/{merchantId}/notification/merchantToken/{eventId}`.
/// It carries no authentication, so it is a trigger, never data: only Apple's ranges are heard,
/// the ids are bounded, and the answer is 200 once the event is recorded (or was before).
struct MerchantTokenNotificationController {
    let service: MerchantTokenService
    let sources: NotificationSources

    func notify(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let forwarded = request.headers[values: .xForwardedFor]
        guard sources.admits(peer: context.remoteAddress, forwardedFor: forwarded) else {
            service.metrics?.merchantTokenEvent(.refusedSource)
            throw APIError.forbidden("notifications are accepted from Apple's addresses only")
        }
        let merchantID = context.parameters.get("merchantId") ?? ""
        let eventID = context.parameters.get("eventId") ?? ""
        do {
            _ = try await service.receiveNotification(merchantID: merchantID, eventID: eventID)
        } catch {
            throw APIError(error)
        }
        return Response(status: .ok)
    }
}

/// Merchants' calls to Apple through Paywarden (scope `merchant-tokens`): unlink a merchant token,
/// change the URL Apple notifies. The API key's organisation must hold a token for it.
struct MerchantTokensController {
    let service: MerchantTokenService
    let maxBodyBytes: Int

    struct UnlinkRequest: Decodable {
        let merchantId: String
        let merchantTokenId: String
    }

    struct NotificationURLRequest: Decodable {
        let merchantId: String
        let merchantTokenId: String
        let url: String
    }

    struct UnlinkResult: ResponseEncodable {
        let merchantTokenId: String
        let tokensUnlinked: Int
    }

    func unlink(_ request: Request, context: PaywardenRequestContext) async throws -> UnlinkResult {
        let (key, organization) = try OrganizationKey.require(context, for: "merchant-token routes")
        let body: UnlinkRequest = try await JSONRequest.decode(request, limit: maxBodyBytes)
        do {
            let effect = try await service.unlink(
                merchantID: body.merchantId, merchantTokenID: body.merchantTokenId, user: "api-key:\(key.name)", organization: organization)
            return UnlinkResult(merchantTokenId: body.merchantTokenId, tokensUnlinked: effect.tokens)
        } catch {
            throw APIError(error)
        }
    }

    func updateNotificationURL(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let (key, organization) = try OrganizationKey.require(context, for: "merchant-token routes")
        let body: NotificationURLRequest = try await JSONRequest.decode(request, limit: maxBodyBytes)
        do {
            try await service.updateNotificationURL(
                merchantID: body.merchantId, merchantTokenID: body.merchantTokenId, url: body.url, user: "api-key:\(key.name)",
                organization: organization)
        } catch {
            throw APIError(error)
        }
        return Response(status: .noContent)
    }
}

/// Apple Pay on the web's merchant validation (scope `session`): the page's `validationURL` is
/// checked against Apple's hosts before any connection, and Apple's session object is returned
/// exactly as Apple sent it.
struct PaymentSessionController {
    let service: MerchantTokenService
    let maxBodyBytes: Int
    /// Registered web merchants' sessions go through the platform integrator's identity key.
    var webMerchants: WebMerchantService? = nil

    struct SessionRequest: Decodable {
        let merchantId: String
        let validationURL: String
        let displayName: String
        let initiative: String
        let initiativeContext: String
    }

    func create(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let (_, organization) = try OrganizationKey.require(context, for: "payment sessions")
        let body: SessionRequest = try await JSONRequest.decode(request, limit: min(maxBodyBytes, 16 * 1024))
        do {
            let session = try PaymentSessionRequest(
                merchantIdentifier: body.merchantId, validationURL: body.validationURL, displayName: body.displayName,
                initiative: body.initiative, initiativeContext: body.initiativeContext)
            if let webMerchants, let merchant = try await webMerchant(body.merchantId, organization: organization, in: webMerchants) {
                let object = try await webMerchants.paymentSession(session, merchant: merchant)
                return Response(
                    status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: object)))
            }
            let object = try await service.paymentSession(session, organization: organization)
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: object)))
        } catch let error as AppleGatewayError {
            throw APIError(MerchantTokenFailure(error))
        } catch let error as MerchantTokenFailure {
            throw APIError(error)
        }
    }

    /// The registered web merchant `merchantId` names, when the integrator is configured and the
    /// organisation may use it; nil sends the request down the merchant path.
    private func webMerchant(_ merchantID: String, organization: OrganizationID, in service: WebMerchantService)
        async throws(MerchantTokenFailure)
        -> WebMerchantRecord?
    {
        guard service.integratorID != nil else { return nil }
        do throws(MerchantTokenFailure) {
            return try await service.webMerchant(merchantID, organization: organization)
        } catch  where error.code == .webMerchantNotFound {
            return nil
        }
    }
}

/// The authenticated key and the organisation it acts for; a key without one is refused (vault,
/// merchant-token and payment-session routes all act for one organisation).
enum OrganizationKey {
    static func require(_ context: PaywardenRequestContext, for what: String) throws -> (APIKey, OrganizationID) {
        guard let key = context.identity else { throw APIError.unauthorized("send an API key as Authorization: Bearer KEY") }
        guard let organization = key.organization else {
            throw APIError.forbidden(
                "API key \(key.name) has no organisation; \(what) need NAME:SHA256HEX:SCOPES:ORGANIZATION (paywarden apikeys create "
                    + "--organization)")
        }
        return (key, organization)
    }
}

/// A bounded JSON body decoded into `Value`; anything else is a 400 `invalid_request` that says why.
enum JSONRequest {
    static func decode<Value: Decodable>(_ request: Request, limit: Int) async throws -> Value {
        let body = try await RequestBody.collect(request, limit: limit)
        do {
            return try JSONDecoder().decode(Value.self, from: Data(body))
        } catch DecodingError.keyNotFound(let key, _) {
            throw APIError(.invalidRequest, message: "the body has no \"\(key.stringValue)\"")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw APIError(.invalidRequest, message: "\"\(field)\" has the wrong type")
        } catch {
            throw APIError(.invalidRequest, message: "the body is not a JSON object")
        }
    }
}

extension APIError {
    init(_ failure: MerchantTokenFailure) {
        self.init(failure.code, message: failure.message)
        // The outbox over its limit drains at the pace of Apple's answers, seconds rather than the
        // milliseconds an in-flight limit takes: a caller told 1 s would only be refused again.
        if failure.code == .overloaded { headers[.retryAfter] = "5" }
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}

extension MerchantTokenNotificationController {
    /// Apple's notification: no API key, gated by its source address instead.
    var routes: RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.get("/v1/apple-pay/{merchantId}/notification/merchantToken/{eventId}", use: notify)
        return routes
    }
}

extension MerchantTokensController {
    /// Unlinking and the notification URL, for a key with the `merchant-tokens` scope.
    func routes(keys: APIKeyRegistry) -> RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.keyed("/v1/merchant-tokens", scope: .merchantTokens, keys)
            .post("/unlink", use: unlink)
            .post("/notification-url", use: updateNotificationURL)
        return routes
    }
}

extension PaymentSessionController {
    /// `POST /v1/apple-pay/payment-session`, for a key with the `session` scope.
    func routes(keys: APIKeyRegistry) -> RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.keyed("/v1/apple-pay", scope: .session, keys).post("/payment-session", use: create)
        return routes
    }
}
