import ApplePay
import Foundation
import Hummingbird
import NIOCore
import PaywardenPrimitives
import PaywardenServices
import Vault

/// `POST /v1/payment-tokens/decrypt`: a `PKPaymentToken` or its `paymentData` in, the
/// decrypted payload exactly as Apple sent it out, with where it came from. A key with an
/// organisation opens only the tokens of its organisation's merchants (those its enabled paypages
/// name), as the vault routes do; a key without one opens any configured merchant's. Every call
/// is counted per API key and outcome.
struct DecryptController {
    let service: any PaymentTokenDecrypting
    let vault: any OrganizationPolicies
    let metrics: ServerMetrics
    let maxBodyBytes: Int

    func decrypt(_ request: Request, context: PaywardenRequestContext) async throws -> VerbatimJSONResponse<DecryptedTokenFacts> {
        let keyName = context.identity?.name ?? "unknown"
        do {
            let body = try await RequestBody.collect(request, limit: maxBodyBytes)
            let merchants = try await merchantIdentifierHashes(for: context.identity?.organization)
            let result: DecryptedPaymentToken
            do {
                result = try await service.decrypt(body, merchantIdentifierHashes: merchants)
            } catch {
                throw APIError(error)
            }
            metrics.decryptRequest(apiKey: keyName, outcome: .ok)
            return VerbatimJSONResponse(key: "paymentData", verbatim: result.paymentData, envelope: DecryptedTokenFacts(result))
        } catch let error as APIError {
            metrics.decryptRequest(apiKey: keyName, outcome: .refused(error.code))
            throw error
        } catch {
            // The body could not be read (the connection went, the read deadline passed).
            metrics.decryptRequest(apiKey: keyName, outcome: .unread)
            throw error
        }
    }

    /// The merchants `organization`'s key may open: nil (any) for a key without an organisation.
    private func merchantIdentifierHashes(for organization: OrganizationID?) async throws -> Set<String>? {
        guard let organization else { return nil }
        do {
            return try await vault.organizationPolicy(organization).merchantIdentifierHashes
        } catch {
            guard error.code == .merchantNotAuthorized else {
                var refusal = APIError(error)
                refusal.eProtectCode = nil
                throw refusal
            }
            throw APIError(
                PaymentTokenError(
                    .merchantNotAuthorized,
                    "the API key's organisation has no enabled paypage, so it has no merchant whose tokens it may open"))
        }
    }
}

/// Request bodies read with a limit: a declared length over it is refused before reading, and a
/// body that grows past it while streaming is refused too, both as 413.
enum RequestBody {
    static func collect(_ request: Request, limit: Int) async throws -> [UInt8] {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.payloadTooLarge(limit: limit)
        }
        do {
            return Array(buffer: try await request.body.collect(upTo: limit))
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw APIError.payloadTooLarge(limit: limit)
        }
    }
}

/// What the decrypt route needs of the decryption: the token's bytes in, the verified and
/// decrypted token out, for the merchants the caller may open (nil: any). ``DecryptionService``
/// (PaywardenServices) in the service; a stand-in in the router-level tests.
protocol PaymentTokenDecrypting: Sendable {
    func decrypt(_ body: [UInt8], merchantIdentifierHashes: Set<String>?) async throws(PaymentTokenError) -> DecryptedPaymentToken
}

/// An organisation's policy (its merchants, its token format), as its paypages make it.
protocol OrganizationPolicies: Sendable {
    func organizationPolicy(_ organization: OrganizationID) async throws(VaultFailure) -> OrganizationPolicy
}

extension DecryptionService: PaymentTokenDecrypting {}
extension VaultService: OrganizationPolicies {}

extension DecryptController {
    /// `POST /v1/payment-tokens/decrypt`, for a key with the `decrypt` scope.
    func routes(keys: APIKeyRegistry) -> RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.keyed("/v1/payment-tokens", scope: .decrypt, keys).post("/decrypt", use: decrypt)
        return routes
    }
}
