import ApplePay
import Foundation
import Hummingbird
import PaywardenPrimitives
import PaywardenServices
import Vault

/// The merchant server's vault routes: redeem and end registration IDs (scope `redeem`),
/// detokenize and delete high-value tokens (scope `detokenize`). Every one acts for the API key's
/// organisation only; a key without one is refused.
///
/// Registration IDs and tokens are bearer secrets: each route takes its secret in a JSON body
/// (`{"registrationId":…}`, `{"token":…}`), where proxies' access logs do not keep it, and in the
/// path as well (the first form offered, kept for existing clients).
struct VaultController {
    let service: VaultService

    func redeem(_ request: Request, context: PaywardenRequestContext) async throws -> VerbatimJSONResponse<RedemptionFacts> {
        try await redeem(try Target(context, parameter: "id"))
    }

    func redeemFromBody(_ request: Request, context: PaywardenRequestContext) async throws -> VerbatimJSONResponse<RedemptionFacts> {
        try await redeem(try await Target(context, request, member: .registrationId))
    }

    func endRegistrationFromBody(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        try await endRegistration(try await Target(context, request, member: .registrationId))
    }

    func detokenizeFromBody(_ request: Request, context: PaywardenRequestContext) async throws -> DetokenizedAccountBody {
        try await detokenize(try await Target(context, request, member: .token))
    }

    func deleteTokenFromBody(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        try await deleteToken(try await Target(context, request, member: .token))
    }

    private func redeem(_ target: Target) async throws -> VerbatimJSONResponse<RedemptionFacts> {
        let redemption = try await Self.answer { () async throws(VaultFailure) in
            try await service.redeem(PresentedRegistrationID(target.value), key: target.key, organization: target.organization)
        }
        return VerbatimJSONResponse(key: "paymentData", verbatim: redemption.paymentData, envelope: RedemptionFacts(redemption))
    }

    func endRegistration(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        try await endRegistration(try Target(context, parameter: "id"))
    }

    private func endRegistration(_ target: Target) async throws -> Response {
        try await Self.answer { () async throws(VaultFailure) in
            try await service.endRegistration(PresentedRegistrationID(target.value), key: target.key, organization: target.organization)
        }
        return Response(status: .noContent)
    }

    func detokenize(_ request: Request, context: PaywardenRequestContext) async throws -> DetokenizedAccountBody {
        try await detokenize(try Target(context, parameter: "token"))
    }

    private func detokenize(_ target: Target) async throws -> DetokenizedAccountBody {
        DetokenizedAccountBody(
            try await Self.answer { () async throws(VaultFailure) in
                try await service.detokenize(target.value, key: target.key, organization: target.organization)
            })
    }

    func deleteToken(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        try await deleteToken(try Target(context, parameter: "token"))
    }

    private func deleteToken(_ target: Target) async throws -> Response {
        try await Self.answer { () async throws(VaultFailure) in
            try await service.deleteToken(target.value, key: target.key, organization: target.organization)
        }
        return Response(status: .noContent)
    }

    /// The vault's failure as the HTTP error with its status and eProtect code.
    private static func answer<Value>(_ body: () async throws(VaultFailure) -> Value) async throws -> Value {
        do {
            return try await body()
        } catch {
            throw APIError(error)
        }
    }

    /// The path parameter, the API key, and the organisation the key acts for.
    private struct Target {
        let value: String
        let key: APIKey
        let organization: OrganizationID

        /// The body member a secret travels in.
        enum Member: String {
            case registrationId, token
        }

        init(_ context: PaywardenRequestContext, parameter: String) throws {
            let (key, organization) = try OrganizationKey.require(context, for: "vault routes")
            self.value = context.parameters.get(parameter) ?? ""
            self.key = key
            self.organization = organization
        }

        /// The secret from `{"MEMBER":"…"}`: the caller is authorised before the body is read.
        init(_ context: PaywardenRequestContext, _ request: Request, member: Member) async throws {
            let (key, organization) = try OrganizationKey.require(context, for: "vault routes")
            let body = try await RequestBody.collect(request, limit: Self.maxBodyBytes)
            // Read by the strict reader the tokens use: a secret's body is refused on a repeated member.
            guard let value = CanonicalJSONObject(json: body)?.string(member.rawValue), !value.isEmpty else {
                throw APIError(
                    VaultFailure.vault(
                        VaultError(.invalidRequest, "the body must be a JSON object whose \(member.rawValue) is a non-empty string")))
            }
            self.value = value
            self.key = key
            self.organization = organization
        }

        /// A registration ID or a token with its JSON around it is well under this.
        static let maxBodyBytes = 1024
    }
}

/// The redemption's body besides the verbatim `paymentData`.
struct RedemptionFacts: Encodable, Sendable, SelfEncodingEnvelope {
    struct Token: Encodable, Sendable {
        let version: String
        let transactionId: String
        let publicKeyHash: String
        let signingTime: String
    }

    struct HighValueToken: Encodable, Sendable {
        let token: String
        let format: String
        let responseCode: String
        let message: String
        let kind: String
        let recurringEligible: Bool
        let merchantTokenIdentifier: String?

        enum CodingKeys: CodingKey { case token, format, responseCode, message, kind, recurringEligible, merchantTokenIdentifier }

        /// `merchantTokenIdentifier` is always present, null for a DPAN, so clients see one shape.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(token, forKey: .token)
            try container.encode(format, forKey: .format)
            try container.encode(responseCode, forKey: .responseCode)
            try container.encode(message, forKey: .message)
            try container.encode(kind, forKey: .kind)
            try container.encode(recurringEligible, forKey: .recurringEligible)
            try container.encode(merchantTokenIdentifier, forKey: .merchantTokenIdentifier)
        }
    }

    struct RegistrationFacts: Encodable, Sendable {
        let redemptions: Int
        let expiresAt: String
    }

    /// One submerchant's entry of a multi-merchant payment, as Apple sent it: the cryptogram is
    /// the one its authorisation carries (the payload beside it holds the same).
    struct AuthenticationResponseFacts: Encodable, Sendable {
        let merchantIdentifier: String
        let transactionAmount: String
        let authenticationData: String
    }

    /// Empty unless the payment is multi-merchant.
    let authenticationResponses: [AuthenticationResponseFacts]
    let token: Token
    let highValueToken: HighValueToken
    let registration: RegistrationFacts
}

extension RedemptionFacts {
    init(_ redemption: Redemption) {
        token = Token(
            version: redemption.version, transactionId: redemption.transactionId, publicKeyHash: redemption.publicKeyHash,
            signingTime: RFC3339.string(from: redemption.signingTime))
        let issued = redemption.highValueToken
        highValueToken = HighValueToken(
            token: issued.token, format: issued.format.rawValue, responseCode: issued.responseCode, message: issued.message,
            kind: issued.kind.rawValue, recurringEligible: issued.kind.recurringEligible,
            merchantTokenIdentifier: issued.merchantTokenIdentifier)
        registration = RegistrationFacts(redemptions: redemption.redemptions, expiresAt: RFC3339.string(from: redemption.expiresAt))
        // Entries as DecryptedPayment reads them: a payload it refuses (only one held from before entries were
        // checked could be) answers none, and its paymentData still carries what Apple sent.
        authenticationResponses = (DecryptedPayment(json: redemption.paymentData)?.authenticationResponses ?? []).map {
            AuthenticationResponseFacts(
                merchantIdentifier: $0.merchantIdentifier, transactionAmount: $0.transactionAmount,
                authenticationData: $0.authenticationData.revealed)
        }
    }

    func writeMembers(to writer: inout JSONMemberWriter) {
        writer.objects("authenticationResponses", authenticationResponses) { entry, response in
            entry.member("authenticationData", response.authenticationData)
            entry.member("merchantIdentifier", response.merchantIdentifier)
            entry.member("transactionAmount", response.transactionAmount)
        }
        writer.object("highValueToken") { issued in
            issued.member("format", highValueToken.format)
            issued.member("kind", highValueToken.kind)
            issued.member("merchantTokenIdentifier", highValueToken.merchantTokenIdentifier)
            issued.member("message", highValueToken.message)
            issued.member("recurringEligible", highValueToken.recurringEligible)
            issued.member("responseCode", highValueToken.responseCode)
            issued.member("token", highValueToken.token)
        }
        writer.object("registration") { facts in
            facts.member("expiresAt", registration.expiresAt)
            facts.member("redemptions", registration.redemptions)
        }
        writer.object("token") { facts in
            facts.member("publicKeyHash", token.publicKeyHash)
            facts.member("signingTime", token.signingTime)
            facts.member("transactionId", token.transactionId)
            facts.member("version", token.version)
        }
    }
}

/// `{"accountNumber","expirationDate","kind","merchantTokenIdentifier"}`: never a cryptogram.
struct DetokenizedAccountBody: ResponseEncodable, Sendable {
    let accountNumber: String
    let expirationDate: String
    let kind: String
    let merchantTokenIdentifier: String?

    enum CodingKeys: CodingKey { case accountNumber, expirationDate, kind, merchantTokenIdentifier }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(accountNumber, forKey: .accountNumber)
        try container.encode(expirationDate, forKey: .expirationDate)
        try container.encode(kind, forKey: .kind)
        try container.encode(merchantTokenIdentifier, forKey: .merchantTokenIdentifier)
    }

    init(_ account: DetokenizedAccount) {
        accountNumber = account.accountNumber.revealed
        expirationDate = account.expirationDate
        kind = account.kind.rawValue
        merchantTokenIdentifier = account.merchantTokenIdentifier
    }
}

extension VaultController {
    /// Registrations for a key with `redeem`, tokens for a key with `detokenize`.
    func routes(keys: APIKeyRegistry) -> RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.keyed("/v1/registrations", scope: .redeem, keys)
            .post("/redeem", use: redeemFromBody)
            .post("/end", use: endRegistrationFromBody)
            .post("/{id}/redeem", use: redeem)
            .delete("/{id}", use: endRegistration)
        routes.keyed("/v1/tokens", scope: .detokenize, keys)
            .post("/detokenize", use: detokenizeFromBody)
            .post("/delete", use: deleteTokenFromBody)
            .post("/{token}/detokenize", use: detokenize)
            .delete("/{token}", use: deleteToken)
        return routes
    }
}
