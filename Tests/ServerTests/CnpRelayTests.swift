import Foundation
import NIOSSL
import PKCS11
import PaywardenConfiguration
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import ProcessorRelays
import Testing
import Vault

/// The cnpAPI relay end to end: forged Apple Pay tokens registered through eProtect or posted in
/// `<applepay>`, an `authorization` or `sale` relayed to a stand-in upstream (real HTTP on loopback
/// that checks it got the card data and no registration ID or encrypted token), and the reply with
/// the high-value token; local declines, passthrough, an upstream down, slow or dropping the
/// connection, hostile XML, and logs without card data.
@Suite(.serialized, .releasesTestResources)
struct CnpRelayTests {
    typealias Namespace = CnpTestMessages.Namespace

    static let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="
    static let timeout = RelayFixture.timeout

    func withFixture(
        tls: Bool = false, clientCertificate: RelayFixture.ClientCertificate? = nil, credentials: Bool = true,
        _ body: (RelayFixture) async throws -> Void
    ) async throws {
        try await RelayFixture.with(tls: tls, clientCertificate: clientCertificate) { base in
            var relay = base
            if credentials { relay.credentials = .init(user: "upstream-user", password: "upstream-secret") }
            return RelayConfiguration(cnp: relay, cnpMerchantIDs: ["example": ["01234", "01235"], "rival": ["56789"]])
        } _: { fixture in
            try await body(fixture)
        }
    }

    // MARK: Helpers

    func register(_ server: TestServer, pan: String) async throws -> String {
        try await server.registerThroughEProtect(pan: pan, cryptogram: Self.cryptogram)
    }

    func post(_ server: TestServer, _ body: [UInt8], path: String = "/vap/communicator/online") async throws -> TestServer.Reply {
        try await server.send(.POST, path, body: body, apiKey: .some(nil), contentType: "text/xml")
    }

    // MARK: Tests

    @Test(arguments: Namespace.allCases)
    func paypageAuthorizationIsRelayedWithTheCardDataAndAnsweredWithTheToken(_ namespace: Namespace) async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922391006"
            let id = try await register(server, pan: pan)
            let reply = try await post(
                server, CnpTestMessages.envelope(namespace, password: server.vaultKey, CnpTestMessages.paypage(registrationID: id)))
            #expect(reply.status == 200)
            let text = reply.text

            let received = try #require(upstream.received.first)
            #expect(upstream.received.count == 1 && received.path == "/vap/communicator/online")
            #expect(received.problems.isEmpty, "\(received.problems)")
            #expect(received.accountNumber == pan && received.expDate == "1229" && received.cardType == "VI")
            #expect(received.cryptogram == Self.cryptogram && received.orderSource == "applepay")
            #expect(received.user == "upstream-user" && received.password == "upstream-secret")
            #expect(!received.text.contains(id) && !received.text.contains(server.vaultKey))

            #expect(text.contains("xmlns=\"\(namespace.rawValue)\"") && text.contains("<authorizationResponse id=\"a1\""), "\(text)")
            #expect(element("response", in: text) == "000")
            #expect(element("tokenResponseCode", in: text) == "801" && element("bin", in: text) == "445711")
            let token = try #require(element(namespace.tokenElement, in: text))
            #expect(token.count == 16 && token.hasPrefix("445711") && token.hasSuffix("1006") && token != pan)
            #expect(!text.contains(pan) && !text.contains(Self.cryptogram) && !text.contains(id), "\(text)")
            #expect(text.contains("<number>445711******1006</number>"), "\(text)")

            let log = server.logs.text
            #expect(!log.contains(pan) && !log.contains(Self.cryptogram) && !log.contains(id) && !log.contains("upstream-secret"))
            let metrics = try await server.operations("/metrics").text
            #expect(metrics.contains(#"paywarden_upstream_requests_total{format="cnpapi",outcome="ok"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"paywarden_upstream_duration_seconds_count{format="cnpapi"} 1"#))
        }
    }

    @Test func applePaySaleIsRelayedThenPreviouslyRegisteredOnTheSecond() async throws {
        try await withFixture(tls: true) { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "5204245250003005"
            var tokens: [String] = []
            for (index, code) in ["801", "802"].enumerated() {
                let token = try server.ecToken(payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: Self.cryptogram))
                let reply = try await post(
                    server,
                    CnpTestMessages.envelope(
                        .cnp, password: server.vaultKey, try CnpTestMessages.applePay(token: token, orderID: "o-\(index)")), path: "/cnpAPI"
                )
                let text = reply.text
                #expect(reply.status == 200 && text.contains("<saleResponse id=\"s1\""), "\(text)")
                #expect(element("tokenResponseCode", in: text) == code && element("type", in: text) == "MC")
                tokens.append(try #require(element("cnpToken", in: text)))
                #expect(!text.contains(pan) && !text.contains(Self.cryptogram))
            }
            #expect(tokens[0] == tokens[1])
            #expect(upstream.received.count == 2)
            for received in upstream.received {
                #expect(received.problems.isEmpty && received.accountNumber == pan && received.cryptogram == Self.cryptogram)
                #expect(received.expDate == "1229" && received.cardType == "MC")
            }
            #expect(!server.logs.text.contains(pan) && !server.logs.text.contains(Self.cryptogram))
        }
    }

    @Test func aClientCertificateIsPresentedToAnUpstreamThatRequiresOne() async throws {
        try await withFixture(clientCertificate: .presented) { fixture in
            let id = try await register(fixture.server, pan: "4457119922397003")
            let reply = try await post(
                fixture.server,
                CnpTestMessages.envelope(.cnp, password: fixture.server.vaultKey, CnpTestMessages.paypage(registrationID: id)))
            #expect(reply.status == 200 && element("response", in: reply.text) == "000", "\(reply.text)")
            #expect(fixture.upstream.received.count == 1)
        }
        // Without one the handshake fails: nothing reaches the upstream's engine.
        try await withFixture(clientCertificate: .withheld) { fixture in
            let id = try await register(fixture.server, pan: "4457119922397003")
            let reply = try await post(
                fixture.server,
                CnpTestMessages.envelope(.cnp, password: fixture.server.vaultKey, CnpTestMessages.paypage(registrationID: id)))
            #expect([502, 503].contains(reply.status) && reply.text.contains(#"response="2""#), "\(reply.text)")
            #expect(fixture.upstream.received.isEmpty)
        }
    }

    @Test func aDeclineIsPassedThroughWithTheToken() async throws {
        try await withFixture { fixture in
            fixture.upstream.setAnswer(.decline(code: "110", message: "Insufficient Funds"))
            let id = try await register(fixture.server, pan: "4457119922392004")
            let text = try await post(
                fixture.server,
                CnpTestMessages.envelope(.litle, password: fixture.server.vaultKey, CnpTestMessages.paypage("sale", registrationID: id))
            )
            .text
            #expect(element("response", in: text) == "110" && element("message", in: text) == "Insufficient Funds", "\(text)")
            #expect(element("tokenResponseCode", in: text) == "801" && element("litleToken", in: text)?.count == 16)
            #expect(!text.contains("4457119922392004"))
        }
    }

    @Test func unknownAndEndedRegistrationIDsAreDeclinedWithoutTheUpstream() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let id = try await register(server, pan: "4457119922393002")
            // Another organisation's key does not know the ID: 877.
            let unknown = try await post(
                server,
                CnpTestMessages.envelope(
                    .cnp, user: "rival-server", password: server.rivalKey, merchantId: "56789", CnpTestMessages.paypage(registrationID: id))
            ).text
            #expect(element("response", in: unknown) == "877" && unknown.contains("<authorizationResponse"), "\(unknown)")
            #expect(element("orderId", in: unknown) == "o-1" && !unknown.contains("tokenResponse"))
            // Ended (its tombstone kept): 878.
            let ended = try await server.send(.DELETE, "/v1/registrations/\(id)", apiKey: .some(server.vaultKey))
            #expect(ended.status == 204 || ended.status == 200)
            let expired = try await post(
                server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage("sale", registrationID: id))
            ).text
            #expect(element("response", in: expired) == "878" && expired.contains("<saleResponse"), "\(expired)")
            // Malformed: 877 too.
            let malformed = try await post(
                server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: "12345"))
            ).text
            #expect(element("response", in: malformed) == "877", "\(malformed)")
            #expect(upstream.received.isEmpty)
        }
    }

    @Test func otherSourcesAndTransactionsPassThroughForTheOrganisationsMerchantsOnly() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let card =
                #"<authorization id="p1" reportGroup="web"><orderId>o-9</orderId><amount>500</amount><orderSource>ecommerce</orderSource>"#
                + "<card><type>VI</type><number>4111111111111111</number><expDate>1230</expDate></card></authorization>"
            let capture = #"<capture id="c1" reportGroup="web"><cnpTxnId>123456789012345678</cnpTxnId></capture>"#
            // Another organisation's merchant, or one bound to none: refused, nothing sent (a paypage too).
            for (password, merchantId) in [(server.vaultKey, "56789"), (server.vaultKey, "99999")] {
                for transaction in [card, capture, CnpTestMessages.paypage(registrationID: "1234567890123456789")] {
                    let reply = try await post(
                        server, CnpTestMessages.envelope(.cnp, password: password, merchantId: merchantId, transaction))
                    #expect(reply.status == 200 && reply.text.contains(#"response="1""#) && reply.text.contains("nothing was sent"))
                }
            }
            #expect(upstream.received.isEmpty)
            // A credit naming a paypage is not passed through: a registration ID never reaches the upstream.
            let credit =
                #"<credit id="r1" reportGroup="web"><orderId>o-8</orderId><amount>500</amount><orderSource>ecommerce</orderSource>"#
                + "<paypage><paypageRegistrationId>1234567890123456789</paypageRegistrationId></paypage></credit>"
            let refused = try await post(server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, credit))
            #expect(refused.status == 200 && refused.text.contains(#"response="1""#), "\(refused.text)")
            #expect(upstream.received.isEmpty)
            // The organisation's own merchants: passed through as written, but for the credentials.
            let authorized = try await post(server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, merchantId: "01235", card))
            #expect(authorized.status == 200 && element("response", in: authorized.text) == "000", "\(authorized.text)")
            #expect(!authorized.text.contains("4111111111111111") && !authorized.text.contains("tokenResponse"), "\(authorized.text)")
            let captured = try await post(server, CnpTestMessages.envelope(.litle, password: server.vaultKey, capture))
            #expect(captured.text.contains("<captureResponse id=\"c1\"") && element("response", in: captured.text) == "000")
            #expect(upstream.received.count == 2)
            for received in upstream.received {
                #expect(received.user == "upstream-user" && received.password == "upstream-secret")
                #expect(!received.text.contains(server.vaultKey))
            }
            #expect(upstream.received.first?.accountNumber == "4111111111111111" && upstream.received.first?.parsed?.merchantId == "01235")
            #expect(!server.logs.text.contains("4111111111111111"))
        }
    }

    @Test(arguments: Namespace.allCases)
    func aPaywardenTokenIsSwappedForItsCardAndAnyOtherTokenPassesThrough(_ namespace: Namespace) async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922390123"
            let issued = try await server.highValueToken(payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: Self.cryptogram))

            // The organisation's own token: the upstream gets the card, with the vault's expiry and
            // the client's orderSource and cardValidationNum, and no cryptogram (a stored token has none).
            let swapped = try await post(
                server,
                CnpTestMessages.envelope(
                    namespace, password: server.vaultKey, CnpTestMessages.tokenTransaction(issued.token, kind: "sale", namespace: namespace)
                ))
            #expect(swapped.status == 200 && element("response", in: swapped.text) == "000", "\(swapped.text)")
            let received = try #require(upstream.received.last)
            #expect(upstream.received.count == 1 && received.problems.isEmpty, "\(received.problems)")
            #expect(received.accountNumber == pan && received.expDate == "1229" && received.cardType == "VI")
            #expect(received.cryptogram == nil && received.orderSource == "ecommerce" && received.text.contains("<cardValidationNum>123<"))
            #expect(!received.text.contains(issued.token) && !received.text.contains("<token>") && !received.text.contains(server.vaultKey))
            #expect(swapped.text.contains("<saleResponse id=\"k1\"") && !swapped.text.contains("tokenResponse"), "\(swapped.text)")
            #expect(RelayFixture.cardDataIn(swapped.text, accountNumber: pan, cryptogram: Self.cryptogram).isEmpty, "\(swapped.text)")
            #expect(try server.auditLines().filter { $0.contains(#""action":"detokenize""#) && $0.contains(#""result":"ok""#) }.count == 1)

            // The upstream's own token (Worldpay's certification token, not in the vault): unchanged.
            let upstreamToken = "1111000276870123"
            let own = try await post(
                server,
                CnpTestMessages.envelope(
                    namespace, password: server.vaultKey, CnpTestMessages.tokenTransaction(upstreamToken, namespace: namespace)))
            #expect(own.status == 200 && element("response", in: own.text) == "000", "\(own.text)")
            let passed = try #require(upstream.received.last)
            #expect(passed.accountNumber == nil && passed.text.contains(">\(upstreamToken)</\(namespace.tokenElement)>"), "\(passed.text)")

            // Another organisation's Paywarden token is not this key's: passed through as the upstream's
            // own, never detokenized for it.
            let rival = try await post(
                server,
                CnpTestMessages.envelope(
                    namespace, user: "rival-server", password: server.rivalKey, merchantId: "56789",
                    CnpTestMessages.tokenTransaction(issued.token, namespace: namespace)))
            #expect(rival.status == 200 && element("response", in: rival.text) == "000", "\(rival.text)")
            let rivalReceived = try #require(upstream.received.last)
            #expect(upstream.received.count == 3 && rivalReceived.accountNumber == nil)
            #expect(rivalReceived.text.contains(">\(issued.token)</\(namespace.tokenElement)>"))
            #expect(!(try server.auditLines()).contains { $0.contains("api-key:rival-server") && $0.contains(#""action":"detokenize""#) })
            let metrics = try await server.operations("/metrics").text
            #expect(metrics.contains(#"paywarden_vault_operations_total{operation="detokenize",outcome="ok"} 1"#), "\(metrics)")

            // A key without the detokenize scope does not turn the organisation's token into its card.
            let redeemOnly = try await post(
                server,
                CnpTestMessages.envelope(
                    namespace, user: "checkout", password: server.redeemOnlyKey,
                    CnpTestMessages.tokenTransaction(issued.token, namespace: namespace)))
            #expect(redeemOnly.text.contains(#"response="1""#) && redeemOnly.text.contains("detokenize"), "\(redeemOnly.text)")
            #expect(upstream.received.count == 3)

            let log = server.logs.text + (try server.auditLines()).joined(separator: "\n")
            #expect(!log.contains(pan) && !log.contains(issued.token))
        }
    }

    @Test func aRecurringUseOfADPANsTokenIsDeclinedBeforeItIsDetokenizedAndAnMPANsIsRelayed() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let dpan = "4457119922390123"
            let device = try await server.highValueToken(payload: PaymentPayloads.threeDSecure(pan: dpan, cryptogram: Self.cryptogram))
            let recurringUses: [(orderSource: String, extra: String)] = [
                ("recurring", ""), ("installment", ""), ("recurringtel", ""),
                ("ecommerce", "<processingType>merchantInitiatedCOF</processingType>"),
                ("ecommerce", "<processingType>initialRecurring</processingType>"),
                ("ecommerce", "<processingType>initialCOF</processingType>"),
            ]
            for use in recurringUses {
                let declined = try await post(
                    server,
                    CnpTestMessages.envelope(
                        .cnp, password: server.vaultKey,
                        CnpTestMessages.tokenTransaction(device.token, orderSource: use.orderSource, extra: use.extra)))
                let text = declined.text
                #expect(
                    declined.status == 200 && text.contains(#"response="0""#) && text.contains("<authorizationResponse id=\"k1\""),
                    "\(text)")
                #expect(element("response", in: text) == "899" && element("orderId", in: text) == "o-7", "\(use): \(text)")
                #expect(element("message", in: text)?.contains("token_not_recurring_eligible") == true, "\(text)")
            }
            #expect(upstream.received.isEmpty)
            let audit = try server.auditLines()
            #expect(!audit.contains { $0.contains(#""action":"detokenize""#) }, "\(audit)")
            #expect(audit.filter { $0.contains(#""action":"use-stored-token""#) }.count == recurringUses.count)
            #expect(!(try await server.operations("/metrics").text).contains(#"operation="detokenize""#))

            // The cardholder paying with the saved DPAN: relayed.
            let cardholder = try await post(
                server,
                CnpTestMessages.envelope(
                    .cnp, password: server.vaultKey,
                    CnpTestMessages.tokenTransaction(device.token, extra: "<processingType>cardholderInitiatedCOF</processingType>")))
            #expect(
                element("response", in: cardholder.text) == "000" && upstream.received.last?.accountNumber == dpan, "\(cardholder.text)")

            // A merchant token is a stored credential: relayed for a merchant-initiated recurring payment.
            let mpan = "5204245250001488"
            let merchantToken = try await server.highValueToken(payload: PaymentPayloads.merchantToken(pan: mpan))
            let recurring = try await post(
                server,
                CnpTestMessages.envelope(
                    .litle, password: server.vaultKey,
                    CnpTestMessages.tokenTransaction(
                        merchantToken.token, kind: "sale", namespace: .litle, orderSource: "recurring",
                        extra: "<processingType>merchantInitiatedCOF</processingType>")))
            #expect(element("response", in: recurring.text) == "000", "\(recurring.text)")
            let received = try #require(upstream.received.last)
            #expect(upstream.received.count == 2 && received.accountNumber == mpan && received.cardType == "MC")
            #expect(received.orderSource == "recurring" && received.text.contains("merchantInitiatedCOF") && received.cryptogram == nil)
            #expect(RelayFixture.cardDataIn(recurring.text, accountNumber: mpan, cryptogram: Self.cryptogram).isEmpty)
            let log = server.logs.text + (try server.auditLines()).joined(separator: "\n")
            for secret in [dpan, mpan, device.token, merchantToken.token] { #expect(!log.contains(secret)) }
        }
    }

    @Test func anUnlinkedTokenIsDeclined823AndAVaultThatCannotAnswerIsASystemErrorNothingSent() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let mpan = "5204245250001488"
            let merchantToken = try await server.highValueToken(payload: PaymentPayloads.merchantToken(pan: mpan))
            // Apple's UNLINK event, as the merchant-token outbox applies it.
            _ = try await server.server.vault.unlinkMerchantToken("DNITHE302409093402145671", organization: nil)
            let unlinked = try await post(
                server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.tokenTransaction(merchantToken.token)))
            #expect(unlinked.status == 200 && element("response", in: unlinked.text) == "823", "\(unlinked.text)")
            #expect(element("message", in: unlinked.text)?.contains("token_unlinked") == true, "\(unlinked.text)")
            #expect(upstream.received.isEmpty)
            #expect(RelayFixture.cardDataIn(unlinked.text, accountNumber: mpan, cryptogram: Self.cryptogram).isEmpty, "\(unlinked.text)")
            #expect(!unlinked.text.contains(merchantToken.token))

            // The HSM's token is gone: the vault cannot open the card, so the request is refused, not guessed at.
            // NSS keeps its database open, so moving its files does not take the token from a running
            // service (the same reason OpenAPIVaultTests' outage runs on SoftHSM only).
            guard server.token.backend == .softHSM else { return }
            let device = try await server.highValueToken(payload: PaymentPayloads.threeDSecure(pan: "4457119922390131"))
            let store = try #require(server.token.storeDirectory())
            let hidden = server.token.directory + "/away-" + UUID().uuidString
            try FileManager.default.moveItem(atPath: store, toPath: hidden)
            #expect(try await server.waitForReadiness(503), "readiness must fall while the token is gone")
            let down = try await post(
                server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.tokenTransaction(device.token)))
            try FileManager.default.moveItem(atPath: hidden, toPath: store)
            #expect(down.status == 503 && down.text.contains(#"response="2""#), "\(down.status) \(down.text)")
            #expect(down.text.contains("hsm_unavailable") && down.text.contains("nothing was sent"), "\(down.text)")
            #expect(upstream.received.isEmpty)
            #expect(try await server.waitForReadiness(200), "readiness must come back with the token")
            #expect(!down.text.contains("4457119922390131") && !down.text.contains(device.token))
        }
    }

    /// On an HSM that can never run the vault (no AES key wrap, no AES-GCM), a processor's own stored
    /// token still passes through: telling it from a Paywarden token reads a row, not a vault key.
    @Test func theUpstreamsOwnTokenPassesThroughOnAnHSMThatCannotRunTheVault() async throws {
        let device = try FaultInjectingPKCS11.make()
        try device.refuse(.aesKeyWrapPad)
        try device.refuse(.aesGCM)
        try await RelayFixture.with { base in
            var relay = base
            relay.credentials = .init(user: "upstream-user", password: "upstream-secret")
            return RelayConfiguration(cnp: relay, cnpMerchantIDs: ["example": ["01234"]])
        } adjust: {
            $0.hsm.modulePath = device.modulePath
        } _: { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            #expect(server.server.vault.keyring.capabilityGaps.map(\.operation) == [.dataKeyProtection])
            let upstreamToken = "1111000276870123"
            let own = try await post(
                server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.tokenTransaction(upstreamToken)))
            #expect(own.status == 200 && element("response", in: own.text) == "000", "\(own.text)")
            #expect(upstream.received.last?.text.contains(">\(upstreamToken)</cnpToken>") == true)
        }
    }

    @Test func aRegistrationIDIsRelayedOnceSoItsCryptogramAuthorizesOnce() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let id = try await register(server, pan: "4457119922396005")
            let first = try await post(
                server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: id))
            ).text
            #expect(element("response", in: first) == "000", "\(first)")
            let again = try await post(
                server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: id))
            ).text
            #expect(element("response", in: again) == "878", "\(again)")
            #expect(upstream.received.count == 1)
        }
    }

    @Test func anUpstreamThatIsDownOrDropsTheConnectionIsASystemErrorAfterOneAttempt() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            // Reached, then the connection closes: the request may have arrived; it is not sent again.
            upstream.setAnswer(.dropConnection)
            let dropped = try await post(
                server,
                CnpTestMessages.envelope(
                    .cnp, password: server.vaultKey,
                    CnpTestMessages.paypage(registrationID: try await register(server, pan: "4457119922394000"))))
            #expect(dropped.status == 502 && dropped.text.contains(#"response="2""#), "\(dropped.text)")
            #expect(!dropped.text.contains("<authorizationResponse"))
            try await Task.sleep(for: .milliseconds(300))
            #expect(upstream.received.count == 1)
            // An HTTP error from the upstream: 502, once.
            upstream.setAnswer(.httpError(500))
            let failed = try await post(
                server,
                CnpTestMessages.envelope(
                    .cnp, password: server.vaultKey,
                    CnpTestMessages.paypage(registrationID: try await register(server, pan: "4457119922394000"))))
            #expect(failed.status == 502 && failed.text.contains(#"response="2""#))
            #expect(upstream.received.count == 2)
            // Down: 503 within the timeout (timed from the relay call, not the registration before it).
            let downID = try await register(server, pan: "4457119922394000")
            try await upstream.stop()
            let start = ContinuousClock.now
            let down = try await post(
                server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: downID)))
            #expect(ContinuousClock.now - start < Self.timeout + .seconds(4))
            #expect(
                down.status == 503 && down.text.contains("nothing was sent") && down.text.contains(#"response="2""#),
                "\(down.status) \(down.text)")
            #expect(!down.text.contains("4457119922394000"))
            // openapi.json lists these for both cnpAPI paths (OpenAPIVaultTests counts on it).
            let document = try OpenAPIDocument.load()
            for operation in [OpenAPIVaultTests.cnpOnline, OpenAPIVaultTests.cnpAPI] {
                let documented = document.documentedPairs(operation)
                #expect(OpenAPIVaultTests.cnpRelayFailures.isSubset(of: documented), "\(operation): \(documented.sorted())")
                for reply in [dropped, failed, down] {
                    #expect(documented.contains("\(reply.status) "), "\(operation): \(reply.status)")
                    #expect(reply.header("Content-Type")?.hasPrefix("text/xml") == true, "\(reply.headers)")
                }
            }
            let metrics = try await server.operations("/metrics").text
            #expect(metrics.contains(#"paywarden_upstream_requests_total{format="cnpapi",outcome="http_5xx"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"outcome="unreachable"} 2"#), "\(metrics)")
        }
    }

    @Test func anUpstreamEchoingTheCardDataInAnyFormGivesTheClientNone() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922398001"
            for form in ProcessorUpstreamStandIn.CardDataEcho.allCases {
                upstream.setAnswer(.approveEchoing(form))
                let id = try await register(server, pan: pan)
                let reply = try await post(
                    server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: id)))
                let text = reply.text
                let received = try #require(upstream.received.last)
                #expect(received.accountNumber == pan && received.cryptogram == Self.cryptogram)
                let leaked = RelayFixture.cardDataIn(text, accountNumber: pan, cryptogram: Self.cryptogram)
                #expect(leaked.isEmpty, "\(form): \(leaked) came back in \(text)")
                if form.isMaskable {
                    #expect(reply.status == 200 && element("response", in: text) == "000", "\(form): \(text)")
                    #expect(element("cnpToken", in: text)?.hasSuffix("8001") == true && !text.contains("<!--"), "\(form): \(text)")
                } else {
                    // Nothing can mask a number split across fields or in a name: the reply is refused.
                    #expect(reply.status == 502 && text.contains(#"response="2""#), "\(form): \(reply.status) \(text)")
                }
            }
            #expect(upstream.received.count == ProcessorUpstreamStandIn.CardDataEcho.allCases.count)
            let log = server.logs.text
            #expect(!log.contains(pan) && !log.contains(Self.cryptogram))
        }
    }

    @Test func aSlowUpstreamTimesOutOnceWithoutARetry() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            upstream.setDelay(Self.timeout + .seconds(2))
            let id = try await register(server, pan: "4457119922395007")
            let start = ContinuousClock.now
            let reply = try await post(
                server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: id)))
            let elapsed = ContinuousClock.now - start
            #expect(
                reply.status == 504 && reply.text.contains(#"response="2""#) && reply.text.contains("outcome is unknown"), "\(reply.text)")
            #expect(elapsed >= Self.timeout && elapsed < Self.timeout + .seconds(4), "\(elapsed)")
            try await Task.sleep(for: .seconds(3))
            #expect(upstream.received.count == 1)
            #expect(try await server.operations("/metrics").text.contains(#"outcome="timeout"} 1"#))
        }
    }

    @Test func malformedAndHostileMessagesAreRefusedWithoutAnUpstreamCall() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let id = try await register(server, pan: "4457119922396005")
            let bodies: [String] = [
                // Two payment sources.
                String(
                    decoding: CnpTestMessages.envelope(
                        .cnp, password: server.vaultKey,
                        CnpTestMessages.paypage(registrationID: id).replacingOccurrences(
                            of: "</paypage>", with: "</paypage><card><type>VI</type><number>4111111111111111</number></card>")),
                    as: UTF8.self),
                // No orderSource.
                String(
                    decoding: CnpTestMessages.envelope(
                        .cnp, password: server.vaultKey,
                        CnpTestMessages.paypage(registrationID: id).replacingOccurrences(
                            of: "<orderSource>applepay</orderSource>", with: "")), as: UTF8.self),
                // An entity.
                #"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>"#
                    + String(
                        decoding: CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: "&x;")),
                        as: UTF8.self
                    )
                    .replacingOccurrences(of: #"<?xml version="1.0" encoding="UTF-8"?>"#, with: ""),
                // Wrong credentials.
                String(
                    decoding: CnpTestMessages.envelope(.cnp, password: "pw_wrong", CnpTestMessages.paypage(registrationID: id)),
                    as: UTF8.self),
            ]
            for body in bodies {
                let reply = try await post(server, Array(body.utf8))
                #expect(reply.status == 200 && !reply.text.contains(#"response="0""#), "\(reply.text)")
            }
            #expect(upstream.received.isEmpty)
        }
    }

    /// The stored-credential rule reads one `orderSource`, one `processingType`, whether there is a
    /// `recurringRequest`, and one token: a request carrying two of any of them could be judged on
    /// one and sent with the other (a DPAN taken as customer-initiated, then recurring upstream).
    @Test(arguments: Namespace.allCases)
    func aRequestCarryingTwoOfAnElementTheRuleReadsIsRefusedNothingSent(_ namespace: Namespace) async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let device = try await server.highValueToken(
                payload: PaymentPayloads.threeDSecure(pan: "4457119922390123", cryptogram: Self.cryptogram))
            let token = "<\(namespace.tokenElement)>\(device.token)</\(namespace.tokenElement)>"
            let twice: [(String, String)] = [
                (
                    "orderSource",
                    CnpTestMessages.tokenTransaction(
                        device.token, namespace: namespace, orderSource: "ecommerce</orderSource><orderSource>recurring")
                ),
                (
                    "processingType",
                    CnpTestMessages.tokenTransaction(
                        device.token, namespace: namespace,
                        extra: "<processingType>cardholderInitiatedCOF</processingType>"
                            + "<processingType>merchantInitiatedCOF</processingType>")
                ),
                (
                    "recurringRequest",
                    CnpTestMessages.tokenTransaction(
                        device.token, namespace: namespace,
                        extra: "<recurringRequest><createSubscription><planCode>p</planCode></createSubscription></recurringRequest>"
                            + "<recurringRequest><createSubscription><planCode>p</planCode></createSubscription></recurringRequest>")
                ),
                (
                    namespace.tokenElement,
                    CnpTestMessages.tokenTransaction(device.token, namespace: namespace).replacingOccurrences(
                        of: token, with: token + token)
                ),
            ]
            for (element, transaction) in twice {
                let reply = try await post(server, CnpTestMessages.envelope(namespace, password: server.vaultKey, transaction))
                #expect(reply.status == 200 && !reply.text.contains(#"response="0""#), "\(element): \(reply.text)")
                #expect(reply.text.contains(element), "the refusal names \(element): \(reply.text)")
            }
            #expect(upstream.received.isEmpty, "\(upstream.received.map(\.text))")
            #expect(!(try server.auditLines()).contains { $0.contains(#""action":"detokenize""#) })
        }
    }

    @Test func withoutAnUpstreamAuthorizationsAreRefused() async throws {
        try await withServer { server in
            let reply = try await post(
                server,
                CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: "1234567890123456")))
            #expect(reply.status == 200 && reply.text.contains(#"response="1""#) && reply.text.contains("needs a configured upstream"))
        }
    }

    @Test func upstreamSettingsAreChecked() async throws {
        let refused: [([String: String], String)] = [
            (["PAYWARDEN_RELAY_CNP_UPSTREAM": "http://processor.example.com"], "PAYWARDEN_RELAY_CNP_UPSTREAM"),
            (["PAYWARDEN_RELAY_CNP_UPSTREAM": "https://user:pw@processor.example.com"], "PAYWARDEN_RELAY_CNP_UPSTREAM"),
            (["PAYWARDEN_RELAY_CNP_UPSTREAM": "ftp://processor.example.com"], "PAYWARDEN_RELAY_CNP_UPSTREAM"),
            (
                ["PAYWARDEN_RELAY_CNP_UPSTREAM": "https://processor.example.com", "PAYWARDEN_RELAY_CNP_UPSTREAM_USER": "u"],
                "PAYWARDEN_RELAY_CNP_UPSTREAM_PASSWORD_FILE"
            ),
            (["PAYWARDEN_RELAY_CNP_UPSTREAM_CA": "/etc/hostname"], "PAYWARDEN_RELAY_CNP_UPSTREAM"),
            // No merchant binding: any organisation could charge to any merchant.
            (["PAYWARDEN_RELAY_CNP_UPSTREAM": "https://processor.example.com"], "PAYWARDEN_RELAY_CNP_MERCHANT_IDS"),
            (
                ["PAYWARDEN_RELAY_CNP_UPSTREAM": "https://processor.example.com", "PAYWARDEN_RELAY_CNP_MERCHANT_IDS": "example"],
                "PAYWARDEN_RELAY_CNP_MERCHANT_IDS"
            ),
            (["PAYWARDEN_RELAY_CNP_MERCHANT_IDS": "example=01234"], "PAYWARDEN_RELAY_CNP_UPSTREAM"),
            // Half a client identity.
            (
                [
                    "PAYWARDEN_RELAY_RADIAL_UPSTREAM": "https://radial.example.com",
                    "PAYWARDEN_RELAY_RADIAL_UPSTREAM_CLIENT_CERTIFICATE": "/etc/hostname",
                ], "PAYWARDEN_RELAY_RADIAL_UPSTREAM_CLIENT_KEY"
            ),
            (["PAYWARDEN_RELAY_RADIAL_UPSTREAM": "http://radial.example.com"], "PAYWARDEN_RELAY_RADIAL_UPSTREAM"),
            (["PAYWARDEN_RELAY_UPSTREAM_TIMEOUT_SECONDS": "0"], "PAYWARDEN_RELAY_UPSTREAM_TIMEOUT_SECONDS"),
        ]
        for (environment, name) in refused {
            let error = await #expect(throws: ConfigurationError.self, "\(environment)") {
                try await PaywardenSettings.load(environment: environment)
            }
            #expect(error?.message.contains(name) == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("pw@") != true)
        }
        let passwordFile = NSTemporaryDirectory() + "paywarden-relay-password-\(UUID().uuidString.prefix(8))"
        try OwnerOnlyFile.write("s3cret\n", to: passwordFile)
        defer { try? FileManager.default.removeItem(atPath: passwordFile) }
        let settings = try await PaywardenSettings.load(environment: [
            "PAYWARDEN_RELAY_CNP_MERCHANT_IDS": "example=01234,example=01235,rival=56789",
            "PAYWARDEN_RELAY_CNP_UPSTREAM": "http://127.0.0.1:9999", "PAYWARDEN_RELAY_CNP_UPSTREAM_USER": "upstream",
            "PAYWARDEN_RELAY_CNP_UPSTREAM_PASSWORD_FILE": passwordFile,
        ])
        let configuration = try ServerConfiguration(settings: settings)
        let cnp = try #require(configuration.relay.cnp)
        #expect(cnp.credentials?.user == "upstream" && cnp.credentials?.password.revealed == "s3cret")
        #expect(cnp.timeout == .seconds(30) && configuration.relay.mercuryPay == nil)
        #expect(configuration.relay.cnpMerchantIDs == ["example": ["01234", "01235"], "rival": ["56789"]])
        #expect(!settings.effective.map(\.displayValue).contains { $0.contains("s3cret") })
    }
}
