import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PaywardenServices
import ProcessorMessages
import ProcessorRelays

/// `POST /PaymentsAPI/Credit/SaleByRecordNo` and `…/AuthorizeByRecordNo`: MercuryPay JSON with a
/// registration ID or OmniToken in `RecordNo`, relayed through ``MercuryPayRelay`` to the configured
/// upstream (refused, with nothing redeemed, when none is configured).
///
/// Authentication as MercuryPay clients send it, HTTP Basic with the API key's name as user and
/// the key as password, or `Authorization: Bearer KEY`; the key needs the `redeem` scope and acts
/// for its organisation, which must own the registration ID or token. Every answer, refusals
/// included, is MercuryPay's JSON shape (``MercuryPayErrorResponse`` for errors).
struct MercuryPayController {
    let maxBodyBytes: Int
    /// The MercuryPay upstream, when one is configured.
    let relay: MercuryPayRelay?

    func saleByRecordNo(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        try await handle(.saleByRecordNo, request, identity: context.identity)
    }

    func authorizeByRecordNo(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        try await handle(.authorizeByRecordNo, request, identity: context.identity)
    }

    /// `identity`: the key the Bearer or Basic authenticator found, nil when none was valid.
    private func handle(_ operation: MercuryPayOperation, _ request: Request, identity: APIKey?) async throws -> Response {
        guard let key = identity else {
            return Self.error(
                .unauthorized, code: .unauthorized,
                "send the API key as HTTP Basic (user: the key's name, password: the key) or as Authorization: Bearer KEY",
                headers: [.wwwAuthenticate: #"Basic realm="Paywarden", charset="UTF-8""#])
        }
        guard key.scopes.contains(.redeem), let organization = key.organization else {
            return Self.error(.forbidden, code: .forbidden, "API key \(key.name) needs the redeem scope and an organisation")
        }
        let body = try await RequestBody.collect(request, limit: maxBodyBytes)
        let parsed: MercuryPayRequest
        do throws(ProcessorMessageError) {
            parsed = try MercuryPayRequest.parse(body, operation: operation)
        } catch {
            return Self.error(.badRequest, code: .invalidRequest, error.message)
        }
        guard let relay else {
            return Self.error(
                .serviceUnavailable, code: .upstreamUnavailable,
                "no MercuryPay upstream is configured (relay_mercurypay_upstream); nothing was redeemed or sent",
                invoiceNo: parsed.invoiceNo)
        }
        let submerchant: SubmerchantChoice?
        do throws(VaultFailure) {
            submerchant = try SubmerchantChoice(request.headers)
        } catch {
            return Self.error(.badRequest, code: .invalidRequest, error.message, invoiceNo: parsed.invoiceNo)
        }
        let reply = await relay.relay(parsed, key: key, organization: organization, submerchant: submerchant)
        return Self.json(reply.body, status: reply.status, headers: reply.headers)
    }

    static func error(
        _ status: HTTPResponse.Status, code: StableCode, _ message: String, invoiceNo: String? = nil, headers: HTTPFields = [:]
    ) -> Response {
        json(
            MercuryPayErrorResponse.body(returnCode: nil, textResponse: message, invoiceNo: invoiceNo, paywardenCode: code.rawValue),
            status: status,
            headers: headers)
    }

    static func json(_ body: ProcessorJSON, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: body.serialized())))
    }
}

extension MercuryPayController {
    /// MercuryPay's two operations, with a key as Bearer or Basic credentials; the controller
    /// authorises, answering in MercuryPay's error shape.
    func routes(keys: APIKeyRegistry) -> RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.group().add(middleware: BearerAPIKeyAuthenticator(registry: keys)).add(middleware: BasicAPIKeyAuthenticator(registry: keys))
            .post(RouterPath(MercuryPayOperation.saleByRecordNo.path), use: saleByRecordNo)
            .post(RouterPath(MercuryPayOperation.authorizeByRecordNo.path), use: authorizeByRecordNo)
        return routes
    }
}
