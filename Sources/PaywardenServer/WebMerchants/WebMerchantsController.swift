import Foundation
import HTTPTypes
import Hummingbird
import MerchantTokens
import OutboundTLS
import PaywardenServices
import PaywardenStorage

/// The platform integrator's web merchants (scope `platform`): register with Apple, unregister,
/// and show Paywarden's record beside Apple's. A key with an organisation acts on the merchants
/// it registered; a key without one on every merchant.
struct WebMerchantsController {
    let service: WebMerchantService
    let maxBodyBytes: Int

    struct RegisterRequest: Decodable {
        let partnerInternalMerchantIdentifier: String
        let partnerMerchantName: String
        let domainNames: [String]
        let encryptTo: String?
        let merchantUrl: String?
    }

    struct UnregisterRequest: Decodable {
        let domainNames: [String]
        let reason: String
    }

    struct Listed: ResponseEncodable {
        let webMerchants: [WebMerchantView]
    }

    /// A registration belongs to the key's organisation, whose payment sessions alone may use it.
    func register(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let (key, organization) = try OrganizationKey.require(context, for: "web-merchant registrations")
        let body: RegisterRequest = try await JSONRequest.decode(request, limit: min(maxBodyBytes, 256 * 1024))
        let record: WebMerchantRecord
        do throws(MerchantTokenFailure) {
            record = try await service.register(
                partnerInternalMerchantIdentifier: body.partnerInternalMerchantIdentifier, partnerMerchantName: body.partnerMerchantName,
                domainNames: body.domainNames, encryptTo: body.encryptTo, merchantURL: body.merchantUrl, user: "api-key:\(key.name)",
                organization: organization, actor: .organizationKey)
        } catch {
            throw APIError(error)
        }
        return try Self.json(WebMerchantView(record), status: .created)
    }

    func unregister(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let key = try Self.requireKey(context)
        let identifier = try Self.identifier(context)
        let body: UnregisterRequest = try await JSONRequest.decode(request, limit: min(maxBodyBytes, 256 * 1024))
        let record: WebMerchantRecord
        do throws(MerchantTokenFailure) {
            record = try await service.unregister(
                partnerInternalMerchantIdentifier: identifier, domainNames: body.domainNames, reason: body.reason,
                user: "api-key:\(key.name)", organization: key.organization)
        } catch {
            throw APIError(error)
        }
        return try Self.json(WebMerchantView(record), status: .ok)
    }

    func show(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let key = try Self.requireKey(context)
        let identifier = try Self.identifier(context)
        let shown: WebMerchantShown
        do throws(MerchantTokenFailure) {
            shown = try await service.show(partnerInternalMerchantIdentifier: identifier, organization: key.organization)
        } catch {
            throw APIError(error)
        }
        return try Self.json(WebMerchantShownView(shown), status: .ok)
    }

    func list(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let key = try Self.requireKey(context)
        let records: [WebMerchantRecord]
        do throws(MerchantTokenFailure) {
            records = try await service.list(organization: key.organization)
        } catch {
            throw APIError(error)
        }
        return try Self.json(Listed(webMerchants: records.map(WebMerchantView.init)), status: .ok)
    }

    struct Domains: ResponseEncodable {
        /// What the key's organisation serves to prove a domain; absent for a key without one.
        let challenge: Challenge?
        let domains: [WebMerchantDomainView]

        struct Challenge: Encodable {
            let path: String
            let line: String
        }
    }

    /// The domains the key's organisation holds (every organisation's, for a key without one), and
    /// the challenge it serves under a domain to prove it.
    func domains(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let key = try Self.requireKey(context)
        let answer: Domains
        do throws(MerchantTokenFailure) {
            var challenge: Domains.Challenge?
            if let organization = key.organization {
                let line = try await service.domainChallenge(organization: organization)
                challenge = Domains.Challenge(path: DomainChallenge.path, line: line)
            }
            answer = Domains(
                challenge: challenge, domains: try await service.domains(organization: key.organization).map(WebMerchantDomainView.init))
        } catch {
            throw APIError(error)
        }
        return try Self.json(answer, status: .ok)
    }

    private static func requireKey(_ context: PaywardenRequestContext) throws -> APIKey {
        guard let key = context.identity else { throw APIError.unauthorized("send an API key as Authorization: Bearer KEY") }
        return key
    }

    /// The path's identifier, percent-decoded (Apple's set includes `|`, `&`, `$`, `;` and `+`).
    private static func identifier(_ context: PaywardenRequestContext) throws -> String {
        let raw = context.parameters.get("id") ?? ""
        guard let decoded = raw.removingPercentEncoding, WebMerchantField.isPartnerIdentifier(decoded) else {
            throw APIError(
                .invalidRequest,
                message: "the path's partnerInternalMerchantIdentifier must be 3 to 1024 characters from a-z A-Z 0-9 and "
                    + "~ - _ + & @ $ ! | , . ; (percent-encoded where a URL needs it)")
        }
        return decoded
    }

    private static func json(_ value: some Encodable, status: HTTPResponse.Status) throws -> Response {
        let body = try JSONResponses.encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// `/.well-known/apple-developer-merchantid-domain-association`: the platform integrator's
/// domain-verification file as stored, byte for byte, for any Host, without authentication or
/// redirect, as Apple fetches it from every registered domain before registering it.
struct DomainAssociationController {
    let service: WebMerchantService

    func serve(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let stored: [UInt8]?
        do throws(MerchantTokenFailure) {
            stored = try await service.domainAssociation()?.content
        } catch {
            throw APIError(error)
        }
        guard let stored else {
            throw APIError(.notFound, code: .domainAssociationMissing, message: "no domain-verification file is stored")
        }
        return Response(
            status: .ok, headers: [.contentType: "text/plain", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: stored)))
    }
}

extension WebMerchantsController {
    /// The platform's web merchants and their domains, for a key with the `platform` scope.
    func routes(keys: APIKeyRegistry) -> RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.keyed("/v1/apple-pay/web-merchants", scope: .platform, keys)
            .post(use: register)
            .get(use: list)
            .get("/{id}", use: show)
            .post("/{id}/unregister", use: unregister)
        routes.keyed("/v1/apple-pay/web-merchant-domains", scope: .platform, keys).get(use: domains)
        return routes
    }
}

extension DomainAssociationController {
    /// Apple fetches the domain-verification file with no credentials, for any registered host.
    var routes: RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.get("/.well-known/apple-developer-merchantid-domain-association", use: serve)
        return routes
    }
}
