import ApplePay
import Foundation
import NIOHTTP1
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing
import Vault

/// The vault through HTTP on loopback, as a mobile app and a merchant's server use it: eProtect
/// registration, redemption, detokenization and deletion, with every eProtect code produced.
@Suite(.serialized, .releasesTestResources)
struct VaultEndpointTests {
    struct EProtect: Decodable {
        let paypageRegistrationId: String?
        let bin: String?
        let type: String?
        let firstSix: String?
        let lastFour: String?
        let litleTxnId: String
        let vantivTxnId: String
        let orderId: String?
        let id: String?
        let reportGroup: String?
        let response: String
        let message: String
        let responseTime: String
        let paywardenCode: String?
    }

    func register(
        _ server: TestServer, token: [UInt8], paypage: String = TestServer.examplePaypage, reportGroup: String = "mobile"
    ) async throws -> EProtect {
        let reply = try await server.send(
            .POST, "/eProtect/paypage", body: try EProtectForms.form(token: token, paypageID: paypage, reportGroup: reportGroup),
            apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
        #expect(reply.status == 200, "\(reply.text)")
        return try JSONDecoder().decode(EProtect.self, from: Data(reply.body))
    }

    func json(_ reply: TestServer.Reply) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any] ?? [:]
    }

    func eProtectCode(_ reply: TestServer.Reply) -> String? {
        ((try? json(reply))?["error"] as? [String: Any])?["eProtectCode"] as? String
    }

    @Test func theWholeFlowAsAnAppAndAMerchantServerUseIt() async throws {
        try await withServer { server in
            let pan = "4111111111111111"
            let payload = PaymentPayloads.threeDSecure(pan: pan)
            let registered = try await register(server, token: try server.ecToken(payload: payload))
            #expect(registered.response == "870" && registered.message == "Success")
            let id = try #require(registered.paypageRegistrationId)
            #expect(id.count == 19 && RegistrationID.isWellFormed(id) && !Luhn.isValid(id))
            #expect(
                registered.bin == "411111" && registered.firstSix == "411111" && registered.lastFour == "1111" && registered.type == "VI")
            #expect(registered.litleTxnId == registered.vantivTxnId && registered.litleTxnId.count == 18)
            #expect(registered.id == "reg-1" && registered.orderId == "order-1" && registered.reportGroup == "mobile")
            #expect(registered.responseTime.count == 19 && registered.paywardenCode == nil)

            // The merchant's server redeems it: Apple's payload byte for byte, the facts, a token.
            let redeemed = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey)
            #expect(redeemed.status == 200, "\(redeemed.text)")
            #expect(redeemed.text.hasPrefix("{\"paymentData\":" + String(decoding: payload, as: UTF8.self) + ","))
            let body = try json(redeemed)
            let facts = try #require(body["token"] as? [String: Any])
            #expect(facts["version"] as? String == "EC_v1" && (facts["transactionId"] as? String)?.count == 64)
            let token = try #require(body["highValueToken"] as? [String: Any])
            let value = try #require(token["token"] as? String)
            #expect(token["responseCode"] as? String == "801" && token["format"] as? String == "T")
            #expect(value.count == 16 && value.hasPrefix("411111") && value.hasSuffix("1111") && Luhn.isModTenPlusOne(value))
            #expect(token["kind"] as? String == "dpan" && token["recurringEligible"] as? Bool == false)
            #expect(token.keys.contains("merchantTokenIdentifier"))

            // Redeemable again within its lifetime; the same account number is 802 with the same token.
            let again = try json(try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey))
            #expect((again["highValueToken"] as? [String: Any])?["responseCode"] as? String == "802")
            #expect((again["registration"] as? [String: Any])?["redemptions"] as? Int == 2)
            let second = try await register(server, token: try server.ecToken(payload: payload))
            let secondRedeemed = try json(
                try await server.send(
                    .POST, "/v1/registrations/\(try #require(second.paypageRegistrationId))/redeem", apiKey: server.vaultKey))
            let secondToken = try #require(secondRedeemed["highValueToken"] as? [String: Any])
            #expect(secondToken["token"] as? String == value && secondToken["responseCode"] as? String == "802")

            // Detokenize: the account number and expiry, never a cryptogram; audited without either.
            let account = try await server.send(.POST, "/v1/tokens/\(value)/detokenize", apiKey: server.vaultKey)
            #expect(account.status == 200, "\(account.text)")
            let detokenized = try json(account)
            #expect(detokenized["accountNumber"] as? String == pan && detokenized["expirationDate"] as? String == "291231")
            #expect(
                detokenized["kind"] as? String == "dpan"
                    && Set(detokenized.keys) == ["accountNumber", "expirationDate", "kind", "merchantTokenIdentifier"])
            let audit = try String(contentsOfFile: try #require(server.server.configuration.auditLogPath), encoding: .utf8)
            #expect(audit.contains("\"action\":\"detokenize\"") && audit.contains("api-key:merchant-server"))
            #expect(audit.contains("\"action\":\"redeem\"") && audit.contains("registration reg:"))
            #expect(!audit.contains(pan) && !audit.contains(value) && !audit.contains(id))

            // Ending the registration destroys its payload: 878 from then on, not 877.
            #expect(try await server.send(.DELETE, "/v1/registrations/\(id)", apiKey: server.vaultKey).status == 204)
            let ended = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey)
            #expect(ended.status == 410 && ended.errorCode == "registration_expired" && (eProtectCode(ended)) == "878")

            // Deleting the token removes the account number; the token is unknown afterwards.
            #expect(try await server.send(.DELETE, "/v1/tokens/\(value)", apiKey: server.vaultKey).status == 204)
            let gone = try await server.send(.POST, "/v1/tokens/\(value)/detokenize", apiKey: server.vaultKey)
            #expect(gone.status == 404 && gone.errorCode == "token_not_found" && (eProtectCode(gone)) == "822")

            // Counted by outcome; nothing secret in the log or the metrics.
            let metrics = try await server.operations("/metrics").text
            #expect(metrics.contains(#"paywarden_vault_operations_total{operation="register",outcome="ok"} 2"#))
            #expect(metrics.contains(#"paywarden_vault_operations_total{operation="detokenize",outcome="token_not_found"} 1"#))
            for secret in [pan, value, id, "AgAAAAAABk4DWZ4C28yUQAAAAAA="] {
                #expect(!server.logs.text.contains(secret) && !metrics.contains(secret))
            }
        }
    }

    @Test func everyEProtectCodeWithItsStableCode() async throws {
        try await withServer { server in
            func code(_ reply: EProtect) -> String { "\(reply.response) \(reply.paywardenCode ?? "")" }
            #expect(
                code(try await register(server, token: try server.ecToken(), paypage: "nosuchpaypage")) == "879 merchant_not_authorized")
            #expect(
                code(try await register(server, token: try server.ecToken(), paypage: TestServer.rivalPaypage, reportGroup: "other"))
                    == "880 report_group_invalid")
            // A token to the example organisation's key posted to the rival's paypage: refused before its id is claimed.
            let token = try server.ecToken()
            #expect(
                code(try await register(server, token: token, paypage: TestServer.rivalPaypage, reportGroup: "rival"))
                    == "879 merchant_not_authorized")
            #expect(try await register(server, token: token).response == "870")
            #expect(code(try await register(server, token: token)) == "889 replayed_transaction")
            var stale = TokenForge.Options()
            stale.signingTime = Date().addingTimeInterval(-3600)
            #expect(code(try await register(server, token: try server.ecToken(options: stale))) == "888 signing_time_out_of_window")
            let tampered = try server.ecToken().flippingByte(of: "signature", at: 80)
            #expect(code(try await register(server, token: tampered)).hasPrefix("888 "))
            let noPAN = Array(#"{"applicationExpirationDate":"291231","paymentDataType":"3DSecure","paymentData":{}}"#.utf8)
            #expect(code(try await register(server, token: try server.ecToken(payload: noPAN))) == "889 invalid_account_number")
            // A form without its Apple Pay fields, and one with a field twice.
            let missing = try await server.send(
                .POST, "/eProtect/paypage", body: EProtectForms.encode([("paypageId", TestServer.examplePaypage), ("id", "x")]),
                apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
            let missingReply = try JSONDecoder().decode(EProtect.self, from: Data(missing.body))
            #expect(code(missingReply) == "889 malformed_token" && missingReply.id == "x" && missingReply.message.contains("reportGroup"))

            // Redemption codes: 877 for unknown and malformed IDs, for another organisation too.
            let registered = try await register(server, token: try server.ecToken())
            let id = try #require(registered.paypageRegistrationId)
            for (path, key) in [
                ("/v1/registrations/1234567890123456789/redeem", server.vaultKey), ("/v1/registrations/not-an-id/redeem", server.vaultKey),
                ("/v1/registrations/\(id)/redeem", server.rivalKey),
            ] {
                let reply = try await server.send(.POST, path, apiKey: key)
                #expect(reply.status == 404 && reply.errorCode == "registration_not_found" && (eProtectCode(reply)) == "877")
            }
            #expect(try await server.send(.DELETE, "/v1/registrations/\(id)", apiKey: server.rivalKey).status == 404)
            // Keys without the scope or without an organisation.
            #expect(try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.decryptKey).status == 403)
            #expect(try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.redeemOnlyKey).status == 200)
            #expect(try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: .some(nil)).status == 401)
            #expect(try await server.send(.POST, "/v1/tokens/4111111111111111/detokenize", apiKey: server.redeemOnlyKey).status == 403)
        }
    }

    @Test func merchantTokensAreMPANsAndOrganisationsAreIsolated() async throws {
        try await withServer { server in
            let registered = try await register(server, token: try server.ecToken(payload: PaymentPayloads.merchantToken()))
            let id = try #require(registered.paypageRegistrationId)
            #expect(registered.type == "MC")
            let body = try json(try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey))
            let token = try #require(body["highValueToken"] as? [String: Any])
            #expect(token["kind"] as? String == "mpan" && token["recurringEligible"] as? Bool == true)
            #expect(token["merchantTokenIdentifier"] as? String == "DNITHE302409093402145671")
            let value = try #require(token["token"] as? String)
            // Another organisation neither detokenizes nor deletes it: unknown to it.
            for method in [HTTPMethod.POST, .DELETE] {
                let path = method == .POST ? "/v1/tokens/\(value)/detokenize" : "/v1/tokens/\(value)"
                let reply = try await server.send(method, path, apiKey: server.rivalKey)
                #expect(reply.status == 404 && reply.errorCode == "token_not_found")
            }
            let account = try json(try await server.send(.POST, "/v1/tokens/\(value)/detokenize", apiKey: server.vaultKey))
            #expect(account["kind"] as? String == "mpan" && account["merchantTokenIdentifier"] as? String == "DNITHE302409093402145671")
        }
    }

    @Test func registrationsAreRateLimitedWithRetryAfter() async throws {
        try await withServer({ $0.eProtectRatePerPaypage = 1 }) { server in
            var statuses: [Int] = []
            var retryAfter: String?
            // Forged first, so the requests follow each other faster than the bucket refills (1 a second).
            let forms = try (0..<6).map { _ in try EProtectForms.form(token: try server.ecToken(), paypageID: TestServer.examplePaypage) }
            for form in forms {
                let reply = try await server.send(
                    .POST, "/eProtect/paypage", body: form, apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
                statuses.append(reply.status)
                if reply.status == 429 {
                    retryAfter = reply.header("Retry-After")
                    #expect(reply.errorCode == "rate_limited")
                }
            }
            // A burst of twice the rate passes; the next is refused with when to retry.
            #expect(statuses.prefix(2) == [200, 200] && statuses.contains(429))
            #expect(retryAfter.flatMap(Int.init).map { $0 >= 1 } == true)
        }
    }

    @Test func expiryAndPurgeFollowTheClock() async throws {
        let offset = Mutex<TimeInterval>(0)
        try await withServer({ configuration in configuration.vaultClock = { Date().addingTimeInterval(offset.withLock { $0 }) } }) {
            server in
            let id = try #require(try await register(server, token: try server.ecToken()).paypageRegistrationId)
            offset.withLock { $0 = 86_400 + 1 }
            let expired = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey)
            #expect(expired.status == 410 && (eProtectCode(expired)) == "878")
            // The purge destroys the payload and keeps the tombstone: still 878.
            let purge = try await server.server.vault.purgeRegistrations()
            #expect(purge.payloadsDestroyed == 1 && purge.tombstonesDeleted == 0)
            #expect(try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey).status == 410)
            // Seven days after it ended the tombstone goes too: the ID is unknown.
            offset.withLock { $0 = 86_400 + 1 + 7 * 86_400 + 1 }
            #expect(try await server.server.vault.purgeRegistrations().tombstonesDeleted == 1)
            let unknown = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey)
            #expect(unknown.status == 404 && (eProtectCode(unknown)) == "877")
        }
    }
}
