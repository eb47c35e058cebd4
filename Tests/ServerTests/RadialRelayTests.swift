import ApplePay
import Foundation
import PaywardenConfiguration
import PaywardenServer
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import ProcessorRelays
import Synchronization
import Testing

/// Radial end to end: forged Apple Pay tokens in a `DecryptBlobRequest` (answered here with the
/// high-value token) and in a digital-wallet `CreditCardAuthRequest` relayed to a stand-in upstream
/// as the card-not-present authorization of the card's tender type, checked there for the DPAN,
/// expiry and cryptogram and the absence of the wallet token; the reply with the token in
/// `PaymentAccountUniqueId`; a real Apple-signed token in the same request refused for its signing
/// time only; faults; an upstream down, slow or answering garbage; logs without card data.
@Suite(.serialized, .releasesTestResources)
struct RadialRelayTests {
    static let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="
    static let namespace = RadialTestMessages.namespace
    static let app = APIKey.generate(name: "radial-app", scopes: [.decrypt, .redeem, .detokenize], organization: "example")
    /// A key that may authorize wallets but not detokenize: a high-value token is not swapped for its card on it.
    static let redeemOnly = APIKey.generate(name: "radial-redeem-only", scopes: [.decrypt, .redeem], organization: "example")

    func withFixture(
        upstream configured: Bool = true, trustingApple: Bool = false, vaultClock: (@Sendable () -> Date)? = nil,
        clientCertificate: RelayFixture.ClientCertificate? = nil, _ body: (RelayFixture) async throws -> Void
    ) async throws {
        try await RelayFixture.with(clientCertificate: clientCertificate) { base in
            var upstream = base
            upstream.format = .radial
            return RelayConfiguration(
                radial: configured ? upstream : nil, radialStoreIDs: configured ? ["example": ["TMSUS"], "rival": ["RIVAL"]] : [:],
                radialAPIKey: configured ? .init("radial-upstream-key") : nil)
        } adjust: { configuration in
            configuration.apiKeys = APIKeyRegistry(
                keys: configuration.apiKeys.keys + [try APIKey(entry: Self.app.entry), try APIKey(entry: Self.redeemOnly.entry)])
            if let vaultClock { configuration.vaultClock = vaultClock }
            if trustingApple {
                // Apple's root beside the test root, as in production, for a token Apple signed.
                configuration.trustAnchors = TrustAnchors(
                    certificates: configuration.trustAnchors.certificates + TrustAnchors.apple.certificates, source: "test root and Apple")
            }
        } _: { fixture in
            try await body(fixture)
        }
    }

    // MARK: Messages

    /// `decryptblob` for a forged token of `payload`: the high-value token it answers.
    func decryptedToken(_ server: TestServer, payload: [UInt8]) async throws -> String {
        let reply = try await post(
            server, Self.decryptPath, try RadialTestMessages.decryptBlobRequest(try server.ecToken(payload: payload)))
        #expect(reply.status == 200, "\(reply.text)")
        return try #require(element("PaymentAccountUniqueId", in: reply.text), "\(reply.text)")
    }

    static let decryptPath = "/v1.0/stores/TMSUS/payments/decryptblob"
    static let authorizationPath = "/v1.0/stores/TMSUS/payments/creditcard/auth/DW.xml"

    func post(_ server: TestServer, _ path: String, _ body: [UInt8], key: String? = app.key) async throws -> TestServer.Reply {
        try await server.send(.POST, path, body: body, apiKey: .some(key), contentType: "application/xml")
    }

    // MARK: Tests

    @Test func decryptBlobIsAnsweredWithTheTokenAndNeverTheCardData() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            let pan = "4457119922391006"
            let token = try server.ecToken(payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: Self.cryptogram))
            let reply = try await post(server, Self.decryptPath, try RadialTestMessages.decryptBlobRequest(token))
            let text = reply.text
            #expect(reply.status == 200 && text.contains("<DecryptBlobReply xmlns=\"\(Self.namespace)\""), "\(text)")
            let issued = try #require(element("PaymentAccountUniqueId", in: text))
            #expect(issued.count == 16 && issued.hasPrefix("445711") && issued.hasSuffix("1006") && issued != pan)
            #expect(text.contains(#"<PaymentAccountUniqueId isToken="true">"#))
            #expect(element("ExpirationDate", in: text) == "2029-12" && element("TenderType", in: text) == "VC")
            #expect(element("CurrencyCode", in: text) == "978" && element("TransactionAmount", in: text) == "1999")
            let transactionID = try PaymentTokenFields(token).transactionId
            #expect(element("ECI", in: text) == "7" && element("ApplePayTransactionId", in: text) == transactionID)
            #expect(!text.contains(pan) && !text.contains(Self.cryptogram))
            // Once: the same token again is a replay.
            let again = try await post(server, Self.decryptPath, try RadialTestMessages.decryptBlobRequest(token))
            #expect(again.status == 422 && element("Code", in: again.text) == "TOKEN_NOT_ACCEPTED", "\(again.status) \(again.text)")
            #expect(element("Description", in: again.text)?.hasPrefix("replayed_transaction: ") == true)
            // The relay's key lacks no scope here; the vault key lacks decrypt.
            let forbidden = try await post(
                server, Self.decryptPath, try RadialTestMessages.decryptBlobRequest(try server.ecToken()), key: server.vaultKey)
            #expect(forbidden.status == 403 && element("Code", in: forbidden.text) == "FORBIDDEN")
            #expect(fixture.upstream.receivedRadial.isEmpty)
            #expect(!server.logs.text.contains(pan) && !server.logs.text.contains(Self.cryptogram))
        }
    }

    @Test func aWalletAuthorizationIsRelayedWithTheCardDataAndAnsweredWithTheToken() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "5204245250003005"
            let token = try server.ecToken(payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: Self.cryptogram))
            let reply = try await post(server, Self.authorizationPath, try RadialTestMessages.walletAuthorization(token))
            let text = reply.text
            #expect(reply.status == 200 && text.contains("<CreditCardAuthReply"), "\(text)")

            let received = try #require(upstream.receivedRadial.first)
            #expect(upstream.receivedRadial.count == 1 && received.path == "/v1.0/stores/TMSUS/payments/creditcard/auth/MC.xml")
            #expect(received.accountNumber == pan && received.expirationDate == "2029-12")
            #expect(received.cryptogram == Self.cryptogram && received.eci == "7" && received.orderId == "ORDER-0005")
            #expect(received.apiKey == "radial-upstream-key" && !received.text.contains(Self.app.key))
            let blob = try PaymentTokenFields(token)
            #expect(!received.text.contains(blob.data) && !received.text.contains(blob.signature))
            // What the relay does not know travels on.
            #expect(received.element("PaymentId")?.text == "b33j9ynrb400" && received.element("SchemaVersion")?.text == "1.2")

            let issued = try #require(element("PaymentAccountUniqueId", in: text))
            #expect(text.contains(#"<PaymentAccountUniqueId isToken="true">"#) && issued.count == 16 && issued.hasSuffix("3005"))
            #expect(element("ResponseCode", in: text) == "APPROVED" && element("TenderType", in: text) == "MC")
            #expect(!text.contains(pan) && !text.contains(Self.cryptogram), "\(text)")
            let log = server.logs.text
            #expect(!log.contains(pan) && !log.contains(Self.cryptogram) && !log.contains("radial-upstream-key"))
            let metrics = try await server.operations("/metrics").text
            #expect(metrics.contains(#"paywarden_upstream_requests_total{format="radial",outcome="ok"} 1"#), "\(metrics)")

            // A decline keeps the token (the card was tokenized) and passes the codes through.
            upstream.setAnswer(.decline(code: "05", message: "Do not honor"))
            let declined = try await post(
                server, Self.authorizationPath,
                try RadialTestMessages.walletAuthorization(
                    try server.ecToken(payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: Self.cryptogram))))
            #expect(declined.status == 200 && element("ResponseCode", in: declined.text) == "DECL")
            #expect(element("PaymentAccountUniqueId", in: declined.text) == issued && !declined.text.contains(pan))
        }
    }

    @Test func theTokenDecryptBlobAnsweredAuthorizesWithItsCryptogramOnceAndADPANNeverWithout() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922390446"
            let token = try await decryptedToken(server, payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: Self.cryptogram))
            #expect(upstream.receivedRadial.isEmpty)
            // Held sealed: the database alone shows neither the number nor the cryptogram.
            guard case .sqlite(let path) = server.server.configuration.database.location else {
                Issue.record("the relay fixture's database is not SQLite")
                return
            }
            let stored = [path, path + "-wal"].compactMap { FileManager.default.contents(atPath: $0) }
            #expect(!stored.isEmpty)
            for file in stored { #expect(!file.contains(Data(pan.utf8)) && !file.contains(Data(Self.cryptogram.utf8))) }

            // First use: the card and the decrypted blob's cryptogram and ECI, as the DW.xml relay sends them.
            let first = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(token))
            #expect(first.status == 200 && element("ResponseCode", in: first.text) == "APPROVED", "\(first.status) \(first.text)")
            let received = try #require(upstream.receivedRadial.first)
            #expect(upstream.receivedRadial.count == 1 && received.path == "/v1.0/stores/TMSUS/payments/creditcard/auth/VC.xml")
            #expect(received.accountNumber == pan && received.expirationDate == "2029-12" && received.orderId == "ORDER-0007")
            #expect(received.cryptogram == Self.cryptogram && received.eci == "7", "\(received.text)")
            #expect(!received.text.contains(token) && received.element("PaymentId")?.text == "b33j9ynrb401")
            #expect(element("PaymentAccountUniqueId", in: first.text) == token && first.text.contains(#"isToken="true""#))
            #expect(RelayFixture.cardDataIn(first.text, accountNumber: pan, cryptogram: Self.cryptogram).isEmpty, "\(first.text)")

            // Later uses have no cryptogram, and a device account number does not authorize without one.
            let second = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(token, orderID: "ORDER-0008"))
            #expect(second.status == 422 && element("Code", in: second.text) == "TOKEN_NOT_ACCEPTED", "\(second.text)")
            #expect(element("Description", in: second.text)?.hasPrefix("cryptogram_required: ") == true, "\(second.text)")
            #expect(upstream.receivedRadial.count == 1)

            // The first use's take of the held card data is audited, without the token, the number or the
            // cryptogram; the refused later use was decided on the token's record (StoredCredentialRule):
            // audited too, and neither use detokenized the token.
            let audit = try String(contentsOfFile: try #require(server.server.configuration.auditLogPath), encoding: .utf8)
            #expect(
                audit.split(separator: "\n").contains {
                    $0.contains(#""action":"take-held-cryptogram""#) && $0.contains("api-key:radial-app") && $0.contains("taken")
                },
                "\(audit)")
            #expect(!audit.contains("\"action\":\"detokenize\""), "\(audit)")
            #expect(
                audit.split(separator: "\n").contains {
                    $0.contains(#""action":"use-stored-token""#) && $0.contains("cryptogram_required")
                },
                "\(audit)")
            #expect(!audit.contains(pan) && !audit.contains(token) && !audit.contains(Self.cryptogram))
            let log = server.logs.text
            #expect(!log.contains(pan) && !log.contains(token) && !log.contains(Self.cryptogram))

            // openapi.json documents what the token authorization answers.
            let documented = try OpenAPIDocument.load().documentedPairs("POST /v1.0/stores/{StoreID}/payments/creditcard/auth/DW.xml")
            for reply in [first, second] { #expect(documented.contains("\(reply.status) "), "\(reply.status)") }
        }
    }

    @Test func theDecryptSequenceAuthorizesOverMutualTLSWithTheClientKeyInTheHSM() async throws {
        try await withFixture(clientCertificate: .inHSM) { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922390578"
            let token = try await decryptedToken(server, payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: Self.cryptogram))
            let reply = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(token))
            #expect(reply.status == 200 && element("ResponseCode", in: reply.text) == "APPROVED", "\(reply.status) \(reply.text)")
            let received = try #require(upstream.receivedRadial.first)
            #expect(received.accountNumber == pan && received.cryptogram == Self.cryptogram)
            #expect(RelayFixture.cardDataIn(reply.text, accountNumber: pan, cryptogram: Self.cryptogram).isEmpty, "\(reply.text)")
            try fixture.expectTheHSMKeysCertificateWasPresented()
        }
    }

    @Test func aTokenOfAnotherOrganisationOrNoneAndAKeyWithoutDetokenizeAreRefusedBeforeAnythingIsSent() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922390552"
            let token = try await decryptedToken(server, payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: Self.cryptogram))
            // The rival organisation, on its own store: the example organisation's token is unknown to it.
            let rival = try await post(
                server, Self.authorizationPath.replacingOccurrences(of: "TMSUS", with: "RIVAL"),
                RadialTestMessages.tokenAuthorization(token),
                key: server.rivalKey)
            #expect(rival.status == 404 && element("Code", in: rival.text) == "TOKEN_NOT_ACCEPTED", "\(rival.text)")
            #expect(element("Description", in: rival.text)?.hasPrefix("token_not_found: ") == true, "\(rival.text)")
            // A well-formed token never issued, and an account number sent as one.
            let unknown = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization("4457110000000001"))
            #expect(unknown.status == 404 && element("Description", in: unknown.text)?.hasPrefix("token_not_found: ") == true)
            let clear = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(pan, isToken: "false"))
            #expect(clear.status == 400 && element("Code", in: clear.text) == "VALIDATION_FAILED", "\(clear.text)")
            #expect(!clear.text.contains(pan))
            // Detokenization needs the scope the vault's detokenize route needs.
            let scope = try await post(
                server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(token), key: Self.redeemOnly.key)
            #expect(scope.status == 403 && element("Code", in: scope.text) == "FORBIDDEN" && scope.text.contains("detokenize"))
            #expect(upstream.receivedRadial.isEmpty)
            for reply in [rival, unknown, clear, scope] {
                #expect(RelayFixture.cardDataIn(reply.text, accountNumber: pan, cryptogram: Self.cryptogram).isEmpty, "\(reply.text)")
            }
            let documented = try OpenAPIDocument.load().documentedPairs("POST /v1.0/stores/{StoreID}/payments/creditcard/auth/DW.xml")
            for reply in [rival, clear, scope] { #expect(documented.contains("\(reply.status) "), "\(reply.status)") }
            // Refused uses spent nothing: the first real use still has the cryptogram.
            let first = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(token))
            #expect(first.status == 200 && upstream.receivedRadial.last?.cryptogram == Self.cryptogram, "\(first.text)")
        }
    }

    @Test func aMerchantTokensLaterUsesAreStoredCredentialsWithoutACryptogram() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "5204245250001488"
            let cryptogram = "AJcBBBBBBBBBBBBBBBBBBBBBBBB="
            let token = try await decryptedToken(server, payload: PaymentPayloads.merchantToken(pan: pan))
            let first = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(token))
            #expect(first.status == 200, "\(first.text)")
            #expect(upstream.receivedRadial.last?.cryptogram == cryptogram && upstream.receivedRadial.last?.accountNumber == pan)
            let second = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(token, orderID: "ORDER-0009"))
            #expect(second.status == 200 && element("PaymentAccountUniqueId", in: second.text) == token, "\(second.text)")
            let received = try #require(upstream.receivedRadial.last)
            #expect(upstream.receivedRadial.count == 2 && received.accountNumber == pan && received.expirationDate == "2030-05")
            #expect(received.cryptogram == nil && received.element("SecureVerificationData") == nil, "\(received.text)")
            #expect(RelayFixture.cardDataIn(second.text, accountNumber: pan, cryptogram: cryptogram).isEmpty, "\(second.text)")
        }
    }

    @Test func theHeldCryptogramLastsADayAndThePurgeDestroysIt() async throws {
        let offset = Mutex<TimeInterval>(0)
        try await withFixture(vaultClock: { Date().addingTimeInterval(offset.withLock { $0 }) }) { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let device = try await decryptedToken(
                server, payload: PaymentPayloads.threeDSecure(pan: "4457119922390669", cryptogram: Self.cryptogram))
            let merchant = try await decryptedToken(server, payload: PaymentPayloads.merchantToken(pan: "5204245250001496"))
            offset.withLock { $0 = 86_400 + 1 }
            // A day on, the DPAN's cryptogram is gone (expired, not yet purged): refused, nothing sent.
            let late = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(device))
            #expect(late.status == 422 && element("Description", in: late.text)?.hasPrefix("cryptogram_required: ") == true)
            #expect(upstream.receivedRadial.isEmpty, "\(late.text)")
            // The purge destroys both sealed payloads (the tokens' cryptograms, ECIs and numbers).
            let purge = try await server.server.vault.purgeRegistrations()
            #expect(purge.payloadsDestroyed == 2, "\(purge)")
            // Back inside the day, the purged payload stays gone: the MPAN goes without a cryptogram.
            offset.withLock { $0 = 0 }
            let merchantUse = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(merchant))
            #expect(merchantUse.status == 200, "\(merchantUse.text)")
            let received = try #require(upstream.receivedRadial.last)
            #expect(received.accountNumber == "5204245250001496" && received.cryptogram == nil, "\(received.text)")
            let deviceUse = try await post(server, Self.authorizationPath, RadialTestMessages.tokenAuthorization(device))
            #expect(deviceUse.status == 422 && upstream.receivedRadial.count == 1, "\(deviceUse.text)")
        }
    }

    @Test func aRealAppleSignedTokenInTheSeedsRequestIsRefusedForItsSigningTimeOnly() async throws {
        try #require(ConformanceVectors.available, "vectors absent: set PAYWARDEN_VECTORS (\(ConformanceVectors.directory))")
        try await withFixture(trustingApple: true) { fixture in
            let token = Array(try ConformanceVectors.data("gala-2014", "token.json"))
            let reply = try await post(fixture.server, Self.authorizationPath, try RadialTestMessages.walletAuthorization(token))
            #expect(reply.status == 422, "\(reply.status) \(reply.text)")
            #expect(element("Code", in: reply.text) == "TOKEN_NOT_ACCEPTED", "\(reply.text)")
            #expect(element("Description", in: reply.text)?.hasPrefix("signing_time_out_of_window: ") == true, "\(reply.text)")
            #expect(fixture.upstream.receivedRadial.isEmpty)
        }
    }

    @Test func malformedRequestsNameTheirFaultAndReachNothing() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let token = try server.ecToken()
            for omitted in ["OrderId", "BillingAddress", "CustomerEmail", "WalletPaymentInformation"] {
                let reply = try await post(
                    server, Self.authorizationPath, try RadialTestMessages.walletAuthorization(token, omitting: omitted))
                #expect(reply.status == 400 && element("Code", in: reply.text) == "VALIDATION_FAILED", "\(omitted): \(reply.text)")
                #expect(reply.text.contains(omitted), "\(omitted): \(reply.text)")
            }
            let hostile: [(String, [UInt8])] = [
                ("a DTD", Array(#"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>"#.utf8)),
                ("another root", Array(#"<DecryptBlobRequest xmlns="\#(Self.namespace)"/>"#.utf8)),
                ("a long order id", try RadialTestMessages.walletAuthorization(token, orderID: String(repeating: "9", count: 21))),
            ]
            for (why, body) in hostile {
                let reply = try await post(server, Self.authorizationPath, body)
                #expect(reply.status == 400 && element("Code", in: reply.text) == "VALIDATION_FAILED", "\(why): \(reply.text)")
            }
            let store = try await server.send(
                .POST, "/v1.0/stores/a%2F..%2Fb/payments/creditcard/auth/DW.xml", body: try RadialTestMessages.walletAuthorization(token),
                apiKey: .some(Self.app.key), contentType: "application/xml")
            #expect(store.status == 400 && store.text.contains("store ID"), "\(store.text)")
            // Another organisation's store: the upstream would act on Paywarden's key for it.
            for store in ["RIVAL", "UNBOUND"] {
                let other = try await post(
                    server, Self.authorizationPath.replacingOccurrences(of: "TMSUS", with: store),
                    try RadialTestMessages.walletAuthorization(token))
                #expect(other.status == 403 && element("Code", in: other.text) == "FORBIDDEN", "\(other.text)")
            }
            // A client's own ExpirationDate in a wallet request is refused, not forwarded.
            let withExpiry = String(decoding: try RadialTestMessages.walletAuthorization(token), as: UTF8.self).replacingOccurrences(
                of: "<OrderId>", with: "<ExpirationDate>2030-01</ExpirationDate><OrderId>")
            let expiry = try await post(server, Self.authorizationPath, Array(withExpiry.utf8))
            #expect(expiry.status == 400 && expiry.text.contains("ExpirationDate"), "\(expiry.text)")
            let unauthorized = try await post(server, Self.authorizationPath, try RadialTestMessages.walletAuthorization(token), key: nil)
            #expect(unauthorized.status == 401 && element("Code", in: unauthorized.text) == "UNAUTHORIZED")
            #expect(upstream.receivedRadial.isEmpty)
            // The token was never decrypted: its transaction id is still free.
            let fine = try await post(server, Self.authorizationPath, try RadialTestMessages.walletAuthorization(token))
            #expect(fine.status == 200, "\(fine.text)")
        }
    }

    @Test func anUpstreamThatIsDownSlowOrUnusableIsAFaultAfterOneAttempt() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            func authorize() async throws -> TestServer.Reply {
                try await post(server, Self.authorizationPath, try RadialTestMessages.walletAuthorization(try server.ecToken()))
            }
            upstream.setAnswer(.garbage)
            let garbage = try await authorize()
            #expect(garbage.status == 502 && element("Code", in: garbage.text) == "SYSTEM_ERROR", "\(garbage.text)")
            upstream.setAnswer(.approve)
            upstream.setDelay(RelayFixture.timeout + .seconds(2))
            let slow = try await authorize()
            #expect(slow.status == 504 && element("Code", in: slow.text) == "TIMEOUT", "\(slow.text)")
            try await Task.sleep(for: .seconds(2))
            #expect(upstream.receivedRadial.count == 2)
            try await upstream.stop()
            let down = try await authorize()
            #expect(down.status == 503 && element("Code", in: down.text) == "SERVICE_UNAVAILABLE", "\(down.text)")
            // No Retry-After: the wallet token's transaction id was spent on the attempt.
            #expect(down.text.contains("nothing was sent") && !down.headers.contains { $0.0.lowercased() == "retry-after" })
        }
    }

    @Test func anUpstreamEchoingTheCardDataInAnyFormGivesTheClientNone() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922398001"
            for form in ProcessorUpstreamStandIn.CardDataEcho.allCases {
                upstream.setAnswer(.approveEchoing(form))
                let token = try server.ecToken(payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: Self.cryptogram))
                let reply = try await post(server, Self.authorizationPath, try RadialTestMessages.walletAuthorization(token))
                let text = reply.text
                let received = try #require(upstream.receivedRadial.last)
                #expect(received.accountNumber == pan && received.cryptogram == Self.cryptogram)
                let leaked = RelayFixture.cardDataIn(text, accountNumber: pan, cryptogram: Self.cryptogram)
                #expect(leaked.isEmpty, "\(form): \(leaked) came back in \(text)")
                if form.isMaskable {
                    #expect(reply.status == 200 && element("ResponseCode", in: text) == "APPROVED", "\(form): \(text)")
                    #expect(text.contains(#"<PaymentAccountUniqueId isToken="true">"#) && !text.contains("<!--"), "\(form): \(text)")
                } else {
                    // Nothing can mask a number split across fields or in a name: the reply is refused.
                    #expect(reply.status == 502 && element("Code", in: text) == "SYSTEM_ERROR", "\(form): \(reply.status) \(text)")
                }
            }
            #expect(upstream.receivedRadial.count == ProcessorUpstreamStandIn.CardDataEcho.allCases.count)
            let log = server.logs.text
            #expect(!log.contains(pan) && !log.contains(Self.cryptogram))
        }
    }

    @Test func withoutAnUpstreamAuthorizationsAreRefusedAndDecryptStillAnswers() async throws {
        try await withFixture(upstream: false) { fixture in
            let server = fixture.server
            let token = try server.ecToken()
            let refused = try await post(server, Self.authorizationPath, try RadialTestMessages.walletAuthorization(token))
            #expect(refused.status == 503 && element("Code", in: refused.text) == "SERVICE_UNAVAILABLE", "\(refused.text)")
            // Nothing was decrypted: the same token is still good for the decrypt API.
            let decrypted = try await post(server, Self.decryptPath, try RadialTestMessages.decryptBlobRequest(token))
            #expect(decrypted.status == 200, "\(decrypted.text)")
        }
    }

    @Test func theUpstreamKeyFileIsChecked() async throws {
        let keyFile = NSTemporaryDirectory() + "paywarden-radial-\(UUID().uuidString.prefix(8))"
        try OwnerOnlyFile.write("sEcReT-radial-42\n", to: keyFile)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        let error = await #expect(throws: ConfigurationError.self) {
            try await PaywardenSettings.load(environment: ["PAYWARDEN_RELAY_RADIAL_UPSTREAM_API_KEY_FILE": keyFile])
        }
        #expect(error?.message.contains("PAYWARDEN_RELAY_RADIAL_UPSTREAM") == true, "\(error?.message ?? "")")
        let unbound = await #expect(throws: ConfigurationError.self) {
            try await PaywardenSettings.load(environment: ["PAYWARDEN_RELAY_RADIAL_UPSTREAM": "https://radial.example.com"])
        }
        #expect(unbound?.message.contains("PAYWARDEN_RELAY_RADIAL_STORE_IDS") == true, "\(unbound?.message ?? "")")
        let settings = try await PaywardenSettings.load(environment: [
            "PAYWARDEN_RELAY_RADIAL_UPSTREAM": "https://radial.example.com", "PAYWARDEN_RELAY_RADIAL_UPSTREAM_API_KEY_FILE": keyFile,
            "PAYWARDEN_RELAY_RADIAL_STORE_IDS": "example=TMSUS",
        ])
        let configuration = try ServerConfiguration(settings: settings)
        #expect(configuration.relay.radial?.format == .radial && configuration.relay.radialAPIKey?.revealed == "sEcReT-radial-42")
        #expect(configuration.relay.radialStoreIDs == ["example": ["TMSUS"]])
        #expect(!settings.effective.map(\.displayValue).contains { $0.contains("sEcReT-radial-42") })
    }
}
