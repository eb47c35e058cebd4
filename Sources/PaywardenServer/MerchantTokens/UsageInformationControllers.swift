import Foundation
import HTTPTypes
import Hummingbird
import MerchantTokens
import PaywardenServices
import PaywardenStorage

/// `PUT /v1/merchant-tokens/{merchantTokenIdentifier}/usage-information?merchantId=…` (scope
/// `merchant-tokens`): the body is Apple's `UsageInformation` JSON, which goes into the package
/// byte for byte once validated. 200 when published, 202 when Apple has no device key yet.
struct UsageInformationController {
    let service: MerchantTokenService
    let maxBodyBytes: Int

    struct Published: ResponseEncodable {
        let merchantTokenId: String
        let state: String
    }

    func publish(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let (key, organization) = try OrganizationKey.require(context, for: "merchant-token routes")
        let merchantTokenID = context.parameters.get("merchantTokenId") ?? ""
        guard let merchantID = request.uri.queryParameters.get("merchantId") else {
            throw APIError(.invalidRequest, message: "the merchantId query parameter is required")
        }
        let body = try await RequestBody.collect(request, limit: maxBodyBytes)
        let (document, files) = try Self.documentAndFiles(body, contentType: request.headers[.contentType] ?? "")
        let state: UsageInformationRecord.State
        do {
            state = try await service.publishUsageInformation(
                merchantID: merchantID, merchantTokenID: merchantTokenID, document: document, files: files, organization: organization,
                user: "api-key:\(key.name)")
        } catch {
            throw APIError(error)
        }
        let answer = try JSONEncoder().encode(Published(merchantTokenId: merchantTokenID, state: state.rawValue))
        return Response(
            status: state == .published ? .ok : .accepted, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: Array(answer))))
    }
}

extension UsageInformationController {
    /// A JSON body is the document alone. `multipart/form-data` carries it as the part named
    /// `usageInformation` and the package's other files as parts named `file`, each `filename` its
    /// path in the package (`merchantLogo@2x.png`, `fr.lproj/usageInformation.strings`).
    static func documentAndFiles(_ body: [UInt8], contentType: String) throws -> ([UInt8], [String: [UInt8]]) {
        guard let boundary = MultipartFormData.boundary(contentType: contentType) else { return (body, [:]) }
        let form: MultipartFormData
        do {
            form = try MultipartFormData(body, boundary: boundary)
        } catch {
            throw APIError(.invalidRequest, message: error.reason)
        }
        var document: [UInt8]?
        var files: [String: [UInt8]] = [:]
        for part in form.parts {
            switch (part.name, part.filename) {
            case ("usageInformation", _) where document == nil:
                document = part.body
            case ("file", let filename?) where files[filename] == nil:
                files[filename] = part.body
            default:
                throw APIError(
                    .invalidRequest,
                    message: "the form holds one part named usageInformation and parts named file, each with its own filename")
            }
        }
        guard let document else { throw APIError(.invalidRequest, message: "the form has no part named usageInformation") }
        return (document, files)
    }
}

/// Apple's Get MerchantToken Usage Information Package, which devices call:
/// `GET /v1/merchantToken/{merchantTokenIdentifier}/usageInformation` with
/// `Authorization: ApplePayMerchantTokenUsageInformation {authenticationToken}`. No API key: the
/// token is the credential. Errors are Apple's `ErrorResponse`. Failed fetches are counted per
/// client address (the peer, or the address a trusted proxy forwards): past the limit, every fetch
/// from that address is answered 429 before anything is looked up, so guessing tokens or merchant
/// token ids is slow. A device presenting its token never fails, and is never counted.
struct UsageInformationPackageController {
    let service: MerchantTokenService
    let failures: RateLimiter
    let clients: ClientAddressResolver

    func package(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let merchantTokenID = context.parameters.get("merchantTokenId") ?? ""
        let client = ClientAddressResolver.limitKey(
            clients.clientAddress(peer: context.remoteAddress, forwardedFor: request.headers[values: .xForwardedFor]))
        if let wait = failures.wait(client) {
            var response = Self.error(.tooManyRequests, "too many failed fetches from this address; retry later")
            response.headers[.retryAfter] = String(max(1, Int(wait.components.seconds) + 1))
            return response
        }
        do {
            let body = try await service.usageInformationPackage(
                merchantTokenID: merchantTokenID, authorization: request.headers[.authorization])
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        } catch .notFound {
            countFailure(client)
            return Self.error(.notFound, "no usage information is served here")
        } catch .unauthorized {
            countFailure(client)
            return Self.error(
                .unauthorized,
                "send Authorization: ApplePayMerchantTokenUsageInformation {authenticationToken} with the token of the latest package")
        } catch .unavailable {
            var response = Self.error(.serviceUnavailable, "usage information cannot be read now; retry later")
            response.headers[.retryAfter] = "1"
            return response
        }
    }

    /// One failure taken from the address's bucket (an empty one goes no further into debt): the
    /// limiter's bound on addresses holds, so a flood of addresses cannot grow it without end.
    private func countFailure(_ client: String) {
        _ = failures.acquire(client)
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let object: [String: Any] = ["errorMessage": message, "statusCode": status.code, "subStatusCode": 0]
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return Response(
            status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: Array(body))))
    }
}

extension UsageInformationController {
    /// Publishing a merchant token's usage information, for a key with the `merchant-tokens` scope.
    func routes(keys: APIKeyRegistry) -> RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.keyed("/v1/merchant-tokens", scope: .merchantTokens, keys).put("/{merchantTokenId}/usage-information", use: publish)
        return routes
    }
}

extension UsageInformationPackageController {
    /// No API key: the device authenticates with the token Apple relayed to it.
    var routes: RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.get("/v1/merchantToken/{merchantTokenId}/usageInformation", use: package)
        return routes
    }
}
