import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaywardenPrimitives
import PaywardenServices
import Synchronization
import Testing
import Vault

@testable import PaywardenServer

/// The decrypt route on a router of its own, with stand-in services (no HSM, no database, no
/// socket): the answer is the payload's bytes as they came with the token's facts; a key with an
/// organisation asks only for its merchants; refusals are typed, the HSM's words kept from the
/// caller; every call counted per key.
struct DecryptControllerRouterTests {
    static let acme = APIKey.generate(name: "acme-decrypt", scopes: [.decrypt], organization: "acme")
    static let processor = APIKey.generate(name: "processor", scopes: [.decrypt])
    static let lonely = APIKey.generate(name: "lonely", scopes: [.decrypt], organization: "no-paypages")
    /// Apple's payload bytes, key order and spacing as sent (never re-serialized).
    static let payload = Array(#"{"applicationPrimaryAccountNumber":"4111111111111111", "currencyCode":"840"}"#.utf8)

    /// Answers what `outcome` says and remembers which merchants it was asked to open.
    final class StandInDecrypter: PaymentTokenDecrypting {
        let outcome: Result<DecryptedPaymentToken, PaymentTokenError>
        let asked = Mutex<[Set<String>?]>([])

        init(_ outcome: Result<DecryptedPaymentToken, PaymentTokenError>) { self.outcome = outcome }

        func decrypt(_ body: [UInt8], merchantIdentifierHashes: Set<String>?) async throws(PaymentTokenError) -> DecryptedPaymentToken {
            asked.withLock { $0.append(merchantIdentifierHashes) }
            return try outcome.get()
        }
    }

    /// acme's paypages name one merchant; any other organisation has none.
    struct StandInPolicies: OrganizationPolicies {
        static let acme = OrganizationPolicy(organization: "acme", tokenFormat: .t, merchantIdentifiers: ["merchant.com.acme"])

        func organizationPolicy(_ organization: OrganizationID) async throws(VaultFailure) -> OrganizationPolicy {
            guard organization == "acme" else { throw .vault(VaultError(.merchantNotAuthorized, "no enabled paypage")) }
            return Self.acme
        }
    }

    // swift-format-ignore: NeverUseForceTry
    static let decrypted = try! DecryptedPaymentToken(
        paymentData: payload, version: .ecV1, transactionID: String(repeating: "ab", count: 32),
        publicKeyHash: "LbsUwAT6w1JV9tFXocU813TCHks+LSuFF0R/eBkrWnQ=", signingTime: Date(timeIntervalSince1970: 1_700_000_000),
        keyID: "0a1b2c", merchantIdentifierHash: String(repeating: "0", count: 64))

    func withRouter(
        _ decrypter: StandInDecrypter, _ body: @Sendable (any TestClientProtocol, ServerMetrics) async throws -> Void
    ) async throws {
        let metrics = ServerMetrics()
        let registry = APIKeyRegistry(keys: [
            try APIKey(entry: Self.acme.entry), try APIKey(entry: Self.processor.entry), try APIKey(entry: Self.lonely.entry),
        ])
        let router = Router(context: PaywardenRequestContext.self)
        router.middlewares.add(RequestObservationMiddleware(metrics: metrics))
        let controller = DecryptController(service: decrypter, vault: StandInPolicies(), metrics: metrics, maxBodyBytes: 4096)
        router.group("/v1/payment-tokens").add(middleware: BearerAPIKeyAuthenticator(registry: registry))
            .add(middleware: APIScopeRequirement(scope: .decrypt))
            .post("/decrypt", use: controller.decrypt)
        try await Application(router: router).test(.router) { client in try await body(client, metrics) }
    }

    func post(_ client: any TestClientProtocol, key: String, body: String = "{}") async throws -> (HTTPResponse, String) {
        try await client.execute(
            uri: "/v1/payment-tokens/decrypt", method: .post, headers: [.authorization: "Bearer \(key)"],
            body: ByteBuffer(string: body)
        ) { ($0.head, String(buffer: $0.body)) }
    }

    @Test func theAnswerIsThePayloadAsItCameWithTheTokensFacts() async throws {
        let decrypter = StandInDecrypter(.success(Self.decrypted))
        try await withRouter(decrypter) { client, metrics in
            let (head, text) = try await post(client, key: Self.acme.key)
            #expect(head.status == .ok && head.headerFields[.contentType] == "application/json")
            #expect(text.hasPrefix(#"{"paymentData":"# + String(decoding: Self.payload, as: UTF8.self) + ","), "\(text)")
            #expect(text.contains(#""transactionId":"\#(String(repeating: "ab", count: 32))""#) && text.contains(#""id":"0a1b2c""#))
            // acme's key asked for acme's merchants only; the processor's key (no organisation) for any.
            _ = try await post(client, key: Self.processor.key)
            #expect(decrypter.asked.withLock { $0 } == [StandInPolicies.acme.merchantIdentifierHashes, nil])
            let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
            #expect(
                exposition.contains(#"paywarden_decrypt_requests_by_key_total{api_key="acme-decrypt",outcome="ok"} 1"#), "\(exposition)")
        }
    }

    @Test func anOrganisationWithoutPaypagesIsRefusedBeforeTheTokenIsTouched() async throws {
        let decrypter = StandInDecrypter(.success(Self.decrypted))
        try await withRouter(decrypter) { client, _ in
            let (head, text) = try await post(client, key: Self.lonely.key)
            #expect(head.status == .forbidden && text.contains(#""code":"merchant_not_authorized""#) && text.contains("no enabled paypage"))
            // The route's refusal carries no eProtect code: that belongs to the vault routes.
            #expect(!text.contains("eProtectCode") && decrypter.asked.withLock { $0.isEmpty })
        }
    }

    @Test(arguments: [
        (PaymentTokenError.Code.signatureInvalid, HTTPResponse.Status.unprocessableContent, false),
        (.malformedToken, .badRequest, false), (.replayedTransaction, .unprocessableContent, false),
        (.hsmUnavailable, .serviceUnavailable, true), (.overloaded, .serviceUnavailable, true),
    ])
    func refusalsAreTypedAndTheHSMsWordsStayInTheLog(_ code: PaymentTokenError.Code, _ status: HTTPResponse.Status, _ retry: Bool)
        async throws
    {
        let decrypter = StandInDecrypter(.failure(PaymentTokenError(code, "CKR_DEVICE_ERROR from C_DeriveKey on key 0a1b2c")))
        try await withRouter(decrypter) { client, metrics in
            let (head, text) = try await post(client, key: Self.processor.key)
            #expect(head.status == status && text.contains(#""code":"\#(code.rawValue)""#), "\(text)")
            #expect((head.headerFields[.retryAfter] == "1") == retry)
            #expect(text.contains("CKR_DEVICE_ERROR") == (code != .hsmUnavailable), "\(text)")
            let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
            #expect(exposition.contains(#"api_key="processor",outcome="\#(code.rawValue)"} 1"#), "\(exposition)")
        }
    }

    @Test func aBodyOverTheLimitIs413AndNeverReachesTheDecrypter() async throws {
        let decrypter = StandInDecrypter(.success(Self.decrypted))
        try await withRouter(decrypter) { client, _ in
            let (head, text) = try await post(client, key: Self.processor.key, body: String(repeating: "x", count: 5000))
            #expect(head.status == .contentTooLarge && text.contains(#""code":"payload_too_large""#), "\(text)")
            #expect(decrypter.asked.withLock { $0.isEmpty })
        }
    }
}
