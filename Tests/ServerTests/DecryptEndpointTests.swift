import ApplePay
import Crypto
import Foundation
import NIOHTTP1
import PaywardenConfiguration
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

/// The decrypt endpoint over real HTTP on loopback: every status and error code of
/// openapi.json is produced here, and the set is compared with the document.
@Suite(.serialized, .releasesTestResources)
struct DecryptEndpointTests {
    /// (status, code) pairs seen by these tests.
    static let observed = Mutex<Set<String>>([])

    @discardableResult
    func expect(_ reply: TestServer.Reply, _ status: Int, _ code: String?, sourceLocation: SourceLocation = #_sourceLocation)
        -> TestServer.Reply
    {
        #expect(reply.status == status, "\(String(decoding: reply.body, as: UTF8.self))", sourceLocation: sourceLocation)
        #expect(reply.errorCode == code, sourceLocation: sourceLocation)
        _ = Self.observed.withLock { $0.insert("\(reply.status) \(reply.errorCode ?? "")") }
        return reply
    }

    @Test func endpointBehaviourMatchesTheOpenAPIDocument() async throws {
        try await withServer({
            $0.maxBodyBytes = 16 * 1024
            $0.requestReadTimeout = .seconds(1)
        }) { server in
            let pan = "4111111111111111"

            // 200: EC_v1 and RSA_v1, the payload spliced in byte for byte.
            let payload = PaymentPayloads.merchantToken(pan: pan)
            let ok = expect(try await server.send(body: try server.ecToken(payload: payload)), 200, nil)
            let text = String(decoding: ok.body, as: UTF8.self)
            #expect(text.hasPrefix(#"{"paymentData":"# + String(decoding: payload, as: UTF8.self) + #","key":{"#))
            let decoded = try #require(try JSONSerialization.jsonObject(with: Data(ok.body)) as? [String: Any])
            #expect((decoded["key"] as? [String: Any])?["id"] as? String == server.ecMerchant.id.hex)
            #expect((decoded["token"] as? [String: Any])?["publicKeyHash"] as? String == server.ecMerchant.publicKeyHash)
            #expect((decoded["token"] as? [String: Any])?["version"] as? String == "EC_v1")
            let rsa = expect(try await server.send(body: try server.rsaToken()), 200, nil)
            #expect(String(decoding: rsa.body, as: UTF8.self).contains(#""version":"RSA_v1""#))

            // 400
            expect(try await server.send(body: Array("{not json".utf8)), 400, "malformed_token")
            expect(try await server.send(body: try server.ecToken().editingToken { $0["version"] = "EC_v9" }), 400, "unsupported_version")
            // 401 and 403
            expect(try await server.send(body: try server.ecToken(), apiKey: .some(nil)), 401, "unauthorized")
            let badKey = expect(try await server.send(body: try server.ecToken(), apiKey: "pw_not-a-key"), 401, "unauthorized")
            #expect(badKey.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            expect(try await server.send(body: try server.ecToken(), apiKey: server.redeemOnlyKey), 403, "forbidden")
            expect(try await server.send(body: try server.ecToken(), apiKey: server.rivalDecryptKey), 403, "merchant_not_authorized")
            // 408: a body that does not arrive whole within the read timeout (any route; this one is documented).
            let slow = try RawTCPConnection(port: server.port)
            try slow.send(
                "POST /v1/payment-tokens/decrypt HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(server.decryptKey)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            let timedOut = slow.read(until: "}}", upTo: .seconds(5)).text
            #expect(timedOut.hasPrefix("HTTP/1.1 408") && timedOut.contains(#""code":"request_timeout""#), "\(timedOut)")
            if timedOut.hasPrefix("HTTP/1.1 408") { _ = Self.observed.withLock { $0.insert("408 request_timeout") } }
            // 413
            expect(try await server.send(body: [UInt8](repeating: 0x20, count: 17 * 1024)), 413, "payload_too_large")
            // 422
            expect(try await server.send(body: try server.ecToken().flippingByte(of: "data")), 422, "signature_invalid")
            let impostor = TokenForge(pki: try ApplePayTestPKI(name: "Impostor", rsaLeaf: false))
            guard case .ecP256(let point) = server.ecMerchant.key.publicKey else { return }
            let foreign = try impostor.ecV1(
                payload: payload, merchant: .init(x963Representation: point),
                merchantIdentifierHash: TokenForge.merchantIdentifierHash(server.ecMerchant.merchantID!)
            )
            .withPublicKeyHash(server.ecMerchant.publicKeyHash)
            expect(try await server.send(body: foreign), 422, "certificate_chain_invalid")
            var stale = TokenForge.Options()
            stale.signingTime = Date().addingTimeInterval(-3600)
            expect(try await server.send(body: try server.ecToken(options: stale)), 422, "signing_time_out_of_window")
            let once = try server.ecToken()
            expect(try await server.send(body: once), 200, nil)
            expect(try await server.send(body: once), 422, "replayed_transaction")
            expect(
                try await server.send(body: try server.ecToken().withPublicKeyHash(Data(count: 32).base64EncodedString())), 422,
                "unknown_public_key_hash")
            var offCurve = TokenForge.Options()
            var spki = Array(P256.KeyAgreement.PrivateKey().publicKey.derRepresentation)
            spki[spki.count - 1] ^= 1
            offCurve.ephemeralPublicKeyOverride = spki
            expect(try await server.send(body: try server.ecToken(options: offCurve)), 422, "decryption_failed")
            let overspent = PaymentPayloads.multiMerchant(transactionAmount: "100")
            expect(try await server.send(body: try server.ecToken(payload: overspent)), 422, "authentication_responses_invalid")

            // Operations endpoints.
            #expect(try await server.operations("/healthz").status == 200)
            #expect(try await server.operations("/readyz").status == 200)
            let metrics = String(decoding: try await server.operations("/metrics").body, as: UTF8.self)
            for name in [
                "paywarden_http_requests_total", "paywarden_decrypt_outcomes_total", "paywarden_decrypt_duration_seconds_bucket",
                "paywarden_hsm_path", "paywarden_decryption_keys", "paywarden_certificate_days_left", "paywarden_hsm_module_recycles_total",
            ] {
                #expect(metrics.contains(name), "\(name)")
            }
            #expect(metrics.contains(#"outcome="replayed_transaction""#))
            #expect(metrics.contains(#"path="ecdh+sensitive-z+digest-key""#))

            // No PAN, cryptogram or key anywhere in what the server logged.
            let logs = server.logs.text
            #expect(logs.contains("request"))
            #expect(!logs.contains(pan))
            #expect(!logs.contains("AJcBBBBBBBBBBBBBBBBBBBBBBBB="))
            #expect(!logs.contains(server.decryptKey))
        }
    }

    /// With an operations listener, `/metrics`, `/healthz` and `/readyz` are served there only:
    /// the API port does not expose merchant and key ids.
    @Test func operationsRoutesMoveToTheirOwnListener() async throws {
        try await withServer({ $0.operationsListen = ListenAddress(host: "127.0.0.1", port: 0) }) { server in
            #expect(server.operationsPort != server.port)
            #expect(try await server.waitForReadiness(200))
            let metrics = try await server.operations("/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.text.contains("merchant.com.example.server"))
            let readiness = try await server.operations("/readyz")
            #expect(readiness.text.contains(#""ready":true"#), "\(readiness.text)")
            for path in ["/metrics", "/healthz", "/readyz"] {
                #expect(try await server.send(.GET, path, apiKey: .some(nil)).status == 404, "\(path) on the API port")
            }
            // The API itself is unchanged.
            #expect(try await server.send(body: try server.ecToken()).status == 200)
            // And the decrypt route is not on the operations port.
            #expect(try await server.send(body: try server.ecToken(), port: server.operationsPort).status == 404)
        }
    }

    @Test func excessLoadGetsAFastOverloadedWithRetryAfter() async throws {
        try await withServer({ $0.maxInFlight = 1 }) { server in
            let tokens = try (0..<24).map { _ in try server.ecToken() }
            let replies = try await withThrowingTaskGroup(of: TestServer.Reply.self) { group in
                for token in tokens { group.addTask { try await server.send(body: token) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(replies.contains { $0.status == 200 })
            let overloaded = replies.filter { $0.status == 503 }
            #expect(!overloaded.isEmpty)
            #expect(overloaded.allSatisfy { $0.errorCode == "overloaded" && $0.header("Retry-After") == "1" })
            for reply in overloaded { expect(reply, 503, "overloaded") }
        }
    }

    @Test func concurrentClientsAllSucceed() async throws {
        try await withServer { server in
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        var statuses: [Int] = []
                        for _ in 0..<25 { statuses.append(try await server.send(body: try server.ecToken()).status) }
                        return statuses
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(statuses.count == 200)
            #expect(statuses.allSatisfy { $0 == 200 })
        }
    }
}
