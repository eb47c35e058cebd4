import Foundation
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import ProcessorMessages
import ProcessorRelays
import Testing

/// The MercuryPay relay end to end: forged Apple Pay tokens registered through eProtect, a
/// `SaleByRecordNo` or `AuthorizeByRecordNo` naming the registration ID (either spelling of
/// RegistrationID) or the high-value token (OmniToken), relayed to a stand-in upstream that checks
/// it got `AcctNo`/`ExpDate` and no RecordNo, TokenType or client credential; the reply with the
/// token in `RecordNo`; refusals in MercuryPay's error shape; an upstream down, slow or dropping
/// the connection; logs without card data.
@Suite(.serialized, .releasesTestResources)
struct MercuryPayRelayTests {
    static let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="
    static let upstreamAuthorization = "Basic " + Data("494901:upstream-secret".utf8).base64EncodedString()

    func withFixture(
        fields: MercuryPayForwarding.Options = .init(cryptogramField: "Cryptogram"),
        organizations: Set<OrganizationID> = ["example", "rival"],
        credentials: Bool = true, clientCertificate: RelayFixture.ClientCertificate? = nil, _ body: (RelayFixture) async throws -> Void
    ) async throws {
        try await RelayFixture.with(clientCertificate: clientCertificate) { base in
            var upstream = base
            upstream.format = .mercuryPay
            if credentials { upstream.credentials = .init(user: "494901", password: "upstream-secret") }
            return RelayConfiguration(mercuryPay: upstream, mercuryPayOrganizations: organizations, mercuryPayFields: fields)
        } _: { fixture in
            try await body(fixture)
        }
    }

    // MARK: Messages

    enum Credential {
        case basic(user: String, key: String)
        case bearer(String)

        var header: (String, String) {
            switch self {
            case .basic(let user, let key): ("Authorization", "Basic " + Data("\(user):\(key)".utf8).base64EncodedString())
            case .bearer(let key): ("Authorization", "Bearer \(key)")
            }
        }
    }

    func body(
        tokenType: String = "RegistrationID", recordNo: String, invoice: String = "10042", frequency: String = "OneTime", extra: String = ""
    ) -> [UInt8] {
        Array(
            (#"{"OperatorID":"test","InvoiceNo":"\#(invoice)","RefNo":"\#(invoice)","Memo":"Paywarden tests","Purchase":"19.99","#
                + #""Tax":"1.60","TokenType":"\#(tokenType)","RecordNo":"\#(recordNo)","Frequency":"\#(frequency)"\#(extra)}"#).utf8)
    }

    func post(
        _ server: TestServer, _ body: [UInt8], operation: MercuryPayOperation = .saleByRecordNo, credential: Credential?
    ) async throws -> (status: Int, json: [String: Any], reply: TestServer.Reply) {
        let reply = try await server.send(
            .POST, operation.path, body: body, apiKey: .some(nil), headers: credential.map { [$0.header] } ?? [])
        let json = (try? JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]) ?? [:]
        return (reply.status, json, reply)
    }

    func merchant(_ server: TestServer) -> Credential { .basic(user: "merchant-server", key: server.vaultKey) }

    // MARK: Tests

    @Test func aRegistrationIDIsRelayedOverMutualTLSWithTheClientKeyInTheHSM() async throws {
        try await withFixture(clientCertificate: .inHSM) { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922391014"
            let id = try await server.registerThroughEProtect(pan: pan, cryptogram: Self.cryptogram)
            let (status, json, reply) = try await post(server, body(recordNo: id), credential: merchant(server))
            #expect(status == 200 && json["CmdStatus"] as? String == "Approved", "\(reply.text)")
            #expect(upstream.receivedMercuryPay.count == 1 && upstream.receivedMercuryPay.first?.accountNumber == pan)
            #expect(!reply.text.contains(pan) && !reply.text.contains(Self.cryptogram))
            try fixture.expectTheHSMKeysCertificateWasPresented()
        }
    }

    @Test(arguments: [
        (MercuryPayOperation.saleByRecordNo, "RegistrationID", "/PaymentsAPI/Credit/Sale"),
        (.authorizeByRecordNo, "RegistrationId", "/PaymentsAPI/Credit/PreAuth"),
    ])
    func aRegistrationIDIsRelayedWithTheCardDataAndAnsweredWithTheToken(
        _ operation: MercuryPayOperation, _ spelling: String, _ upstreamPath: String
    ) async throws {
        try await withFixture(fields: .init(cryptogramField: "Cryptogram", eciField: "ECI")) { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922391006"
            let id = try await server.registerThroughEProtect(pan: pan, cryptogram: Self.cryptogram)
            // The client's own Cryptogram and ECI fields never travel: Paywarden's take their place.
            let (status, json, reply) = try await post(
                server, body(tokenType: spelling, recordNo: id, extra: #","Cryptogram":"client-made","ECI":"05""#), operation: operation,
                credential: merchant(server))
            #expect(status == 200, "\(reply.text)")

            let received = try #require(upstream.receivedMercuryPay.first)
            #expect(upstream.receivedMercuryPay.count == 1 && received.path == upstreamPath)
            #expect(received.accountNumber == pan && received.expDate == "1229")
            #expect(received.field("Cryptogram") == Self.cryptogram && received.field("ECI") == "7")
            // RecordNo's place, everything else forwarded in order, and the upstream's own credentials.
            #expect(
                received.fieldNames == [
                    "OperatorID", "InvoiceNo", "RefNo", "Memo", "Purchase", "Tax", "AcctNo", "ExpDate", "Cryptogram", "ECI", "Frequency",
                ], "\(received.fieldNames)")
            #expect(received.field("Memo") == "Paywarden tests" && received.field("Purchase") == "19.99")
            #expect(received.authorization == Self.upstreamAuthorization)
            #expect(!received.text.contains(id) && !received.text.contains(server.vaultKey) && !received.text.contains("client-made"))

            #expect(json["CmdStatus"] as? String == "Approved" && json["InvoiceNo"] as? String == "10042")
            let token = try #require(json["RecordNo"] as? String)
            #expect(token.count == 16 && token.hasPrefix("445711") && token.hasSuffix("1006") && token != pan)
            #expect(json["AcctNo"] as? String == "XXXXXXXXXXXX1006")
            #expect(!reply.text.contains(pan) && !reply.text.contains(Self.cryptogram) && !reply.text.contains("UPSTREAM-RECORD"))

            // One cryptogram, one authorization: the registration ended when it was relayed.
            let again = try await post(server, body(tokenType: spelling, recordNo: id), operation: operation, credential: merchant(server))
            #expect(again.status == 410 && again.json["PaywardenErrorCode"] as? String == "registration_expired", "\(again.reply.text)")
            #expect(again.json["CmdStatus"] as? String == "Error" && again.json["RecordNo"] == nil)
            #expect(upstream.receivedMercuryPay.count == 1)

            let log = server.logs.text
            #expect(!log.contains(pan) && !log.contains(Self.cryptogram) && !log.contains(id) && !log.contains("upstream-secret"))
            #expect(!log.contains(server.vaultKey))
            let metrics = try await server.operations("/metrics").text
            #expect(metrics.contains(#"paywarden_upstream_requests_total{format="mercurypay",outcome="ok"} 1"#), "\(metrics)")
        }
    }

    @Test func anOmniTokenIsDetokenizedForTheUpstreamAndOnlyForItsOrganisation() async throws {
        try await withFixture(credentials: false) { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "5204245250003005"
            let id = try await server.registerThroughEProtect(pan: pan, cryptogram: Self.cryptogram)
            let first = try await post(server, body(recordNo: id), credential: .bearer(server.vaultKey))
            let token = try #require(first.json["RecordNo"] as? String, "\(first.reply.text)")
            // A key with redeem alone does not turn a token back into its card.
            let redeemOnly = try await post(
                server, body(tokenType: "OmniToken", recordNo: token), credential: .bearer(server.redeemOnlyKey))
            #expect(redeemOnly.status == 403 && redeemOnly.json["PaywardenErrorCode"] as? String == "forbidden", "\(redeemOnly.reply.text)")

            let (status, json, reply) = try await post(
                server, body(tokenType: "OmniToken", recordNo: token, invoice: "10043"), operation: .authorizeByRecordNo,
                credential: merchant(server))
            #expect(status == 200 && json["RecordNo"] as? String == token && json["CmdStatus"] as? String == "Approved", "\(reply.text)")
            let received = try #require(upstream.receivedMercuryPay.last)
            #expect(upstream.receivedMercuryPay.count == 2 && received.path == "/PaymentsAPI/Credit/PreAuth")
            #expect(received.accountNumber == pan && received.expDate == "1229" && received.authorization == nil)
            #expect(!received.text.contains(token) && !reply.text.contains(pan))
            // A stored token has no cryptogram: none is sent, and no client-made one either.
            #expect(!received.fieldNames.contains("Cryptogram") && !received.text.contains(Self.cryptogram))

            // Another organisation's key does not know the token; nothing is sent.
            let rival = try await post(
                server, body(tokenType: "OmniToken", recordNo: token), credential: .basic(user: "rival-server", key: server.rivalKey))
            #expect(rival.status == 404 && rival.json["PaywardenErrorCode"] as? String == "token_not_found", "\(rival.reply.text)")
            #expect(upstream.receivedMercuryPay.count == 2)
            #expect(!server.logs.text.contains(token) && !server.logs.text.contains(pan))
        }
    }

    @Test func aRecurringSaleOnADPANsTokenIsRefusedBeforeItIsDetokenizedAndOnAnMPANsTokenRelayed() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let dpan = "4457119922390123"
            let device = try await server.highValueToken(payload: PaymentPayloads.threeDSecure(pan: dpan, cryptogram: Self.cryptogram))
            #expect(device.kind == "dpan")

            // Recurring on a device account number: refused on the token's record, nothing detokenized or sent.
            let refused = try await post(
                server, body(tokenType: "OmniToken", recordNo: device.token, frequency: "Recurring"), credential: merchant(server))
            #expect(refused.status == 422, "\(refused.reply.text)")
            #expect(
                refused.json["PaywardenErrorCode"] as? String == "token_not_recurring_eligible"
                    && refused.json["CmdStatus"] as? String == "Error")
            #expect(
                refused.json["DSIXReturnCode"] == nil && refused.json["RecordNo"] == nil && refused.json["InvoiceNo"] as? String == "10042")
            #expect((refused.json["TextResponse"] as? String)?.contains("Frequency Recurring") == true)
            #expect(upstream.receivedMercuryPay.isEmpty)
            let audit = try server.auditLines()
            #expect(!audit.contains { $0.contains(#""action":"detokenize""#) }, "\(audit)")
            #expect(
                audit.contains { $0.contains(#""action":"use-stored-token""#) && $0.contains("token_not_recurring_eligible") }, "\(audit)")
            var metrics = try await server.operations("/metrics").text
            #expect(!metrics.contains(#"operation="detokenize""#), "\(metrics)")
            #expect(RelayFixture.cardDataIn(refused.reply.text, accountNumber: dpan, cryptogram: Self.cryptogram).isEmpty)

            // The same token for a one-off payment the cardholder starts: relayed, as a saved card.
            let oneOff = try await post(server, body(tokenType: "OmniToken", recordNo: device.token), credential: merchant(server))
            #expect(oneOff.status == 200 && oneOff.json["CmdStatus"] as? String == "Approved", "\(oneOff.reply.text)")
            #expect(upstream.receivedMercuryPay.count == 1 && upstream.receivedMercuryPay.last?.accountNumber == dpan)

            // A merchant token is a stored credential: its recurring sale is relayed with the MPAN, Frequency kept.
            let mpan = "5204245250001488"
            let merchantToken = try await server.highValueToken(payload: PaymentPayloads.merchantToken(pan: mpan))
            #expect(merchantToken.kind == "mpan")
            let recurring = try await post(
                server, body(tokenType: "OmniToken", recordNo: merchantToken.token, invoice: "10044", frequency: "Recurring"),
                credential: merchant(server))
            #expect(recurring.status == 200 && recurring.json["CmdStatus"] as? String == "Approved", "\(recurring.reply.text)")
            #expect(recurring.json["RecordNo"] as? String == merchantToken.token)
            let received = try #require(upstream.receivedMercuryPay.last)
            #expect(upstream.receivedMercuryPay.count == 2 && received.accountNumber == mpan && received.field("Frequency") == "Recurring")
            #expect(!received.fieldNames.contains("Cryptogram") && !received.text.contains(merchantToken.token))
            #expect(RelayFixture.cardDataIn(recurring.reply.text, accountNumber: mpan, cryptogram: "AJcBBBBBBBBBBBBBBBBBBBBBBBB=").isEmpty)
            metrics = try await server.operations("/metrics").text
            #expect(metrics.contains(#"paywarden_vault_operations_total{operation="detokenize",outcome="ok"} 2"#), "\(metrics)")

            let log = server.logs.text + (try server.auditLines()).joined(separator: "\n")
            for secret in [dpan, mpan, device.token, merchantToken.token] { #expect(!log.contains(secret)) }
        }
    }

    @Test func onlyBoundOrganisationsRelayAndRegistrationIDsNeedACryptogramField() async throws {
        // The rival organisation is not bound to the upstream's merchant.
        try await withFixture(organizations: ["example"]) { fixture in
            let id = try await fixture.server.registerThroughEProtect(pan: "4457119922398001", cryptogram: Self.cryptogram)
            let rival = try await post(fixture.server, body(recordNo: id), credential: .bearer(fixture.server.rivalKey))
            #expect(rival.status == 403 && rival.json["DSIXReturnCode"] as? String == "004117", "\(rival.reply.text)")
            #expect(fixture.upstream.receivedMercuryPay.isEmpty)
        }
        // No field for the cryptogram: a registration ID is refused before it is redeemed.
        try await withFixture(fields: .init()) { fixture in
            let server = fixture.server
            let id = try await server.registerThroughEProtect(pan: "4457119922398001", cryptogram: Self.cryptogram)
            let refused = try await post(server, body(recordNo: id), credential: merchant(server))
            #expect(refused.status == 403 && refused.json["PaywardenErrorCode"] as? String == "merchant_not_authorized")
            #expect((refused.json["TextResponse"] as? String)?.contains("cryptogram") == true, "\(refused.reply.text)")
            #expect(fixture.upstream.receivedMercuryPay.isEmpty)
            let redeemed = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: .some(server.vaultKey))
            #expect(redeemed.status == 200, "\(redeemed.text)")
        }
    }

    @Test func aDeclineCarriesNoRecordNo() async throws {
        try await withFixture { fixture in
            fixture.upstream.setAnswer(.decline(code: "05", message: "DECLINE"))
            let id = try await fixture.server.registerThroughEProtect(pan: "4457119922392004", cryptogram: Self.cryptogram)
            let (status, json, reply) = try await post(fixture.server, body(recordNo: id), credential: merchant(fixture.server))
            #expect(status == 200 && json["CmdStatus"] as? String == "Declined" && json["TextResponse"] as? String == "DECLINE")
            #expect(json["RecordNo"] == nil && json["AcctNo"] as? String == "XXXXXXXXXXXX2004" && !reply.text.contains("4457119922392004"))
        }
    }

    @Test func credentialsAndScopesAreCheckedBeforeAnythingIsRedeemed() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let id = try await server.registerThroughEProtect(pan: "4457119922393002", cryptogram: Self.cryptogram)
            let refused: [(Credential?, Int)] = [
                (nil, 401),
                (.basic(user: "someone-else", key: server.vaultKey), 401),
                (.basic(user: "merchant-server", key: "pw_wrong"), 401),
                (.bearer("pw_wrong"), 401),
                // A key without the redeem scope.
                (.bearer(server.decryptKey), 403),
            ]
            for (credential, expected) in refused {
                let (status, json, reply) = try await post(server, body(recordNo: id), credential: credential)
                #expect(status == expected && json["CmdStatus"] as? String == "Error", "\(credential.debugDescription) \(reply.text)")
                if expected == 401 {
                    #expect(reply.headers.contains { $0.0.lowercased() == "www-authenticate" && $0.1.hasPrefix("Basic") })
                }
            }
            // Another organisation's key does not know the registration ID.
            let rival = try await post(server, body(recordNo: id), credential: .bearer(server.rivalKey))
            #expect(rival.status == 404 && rival.json["PaywardenErrorCode"] as? String == "registration_not_found")
            #expect(upstream.receivedMercuryPay.isEmpty)
            // The registration is still there for its owner.
            let owner = try await post(server, body(recordNo: id), credential: merchant(server))
            #expect(owner.status == 200 && owner.json["CmdStatus"] as? String == "Approved", "\(owner.reply.text)")
        }
    }

    @Test func malformedAndHostileRequestsAreRefusedWithoutAnUpstreamCall() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let id = try await server.registerThroughEProtect(pan: "4457119922396005", cryptogram: Self.cryptogram)
            let bodies: [(String, [UInt8])] = [
                ("card data beside the token", body(recordNo: id, extra: #","AcctNo":"4111111111111111""#)),
                ("MercuryPay's own token", body(tokenType: "MToken", recordNo: id)),
                ("an OmniToken that is not digits", body(tokenType: "OmniToken", recordNo: "not-a-token")),
                ("a duplicate key", body(recordNo: id, extra: #","RecordNo":"4111111111111111""#)),
                ("no purchase", Array(#"{"OperatorID":"t","InvoiceNo":"1","TokenType":"RegistrationID","RecordNo":"x"}"#.utf8)),
                ("not JSON", Array("<xml/>".utf8)),
                ("deep nesting", Array((String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)).utf8)),
            ]
            for (why, body) in bodies {
                let (status, json, reply) = try await post(server, body, credential: merchant(server))
                #expect(status == 400 && json["CmdStatus"] as? String == "Error", "\(why): \(reply.text)")
                #expect(json["PaywardenErrorCode"] as? String == "invalid_request" && !reply.text.contains("4111111111111111"), "\(why)")
            }
            #expect(upstream.receivedMercuryPay.isEmpty)
        }
    }

    @Test func anUpstreamThatIsDownDropsOrIsSlowIsAnErrorAfterOneAttempt() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            upstream.setAnswer(.dropConnection)
            let dropped = try await post(
                server, body(recordNo: try await server.registerThroughEProtect(pan: "4457119922394000", cryptogram: Self.cryptogram)),
                credential: merchant(server))
            #expect(
                dropped.status == 502 && dropped.json["PaywardenErrorCode"] as? String == "upstream_unavailable", "\(dropped.reply.text)")
            #expect(dropped.json["RecordNo"] == nil)

            upstream.setAnswer(.garbage)
            let garbage = try await post(
                server, body(recordNo: try await server.registerThroughEProtect(pan: "4457119922394000", cryptogram: Self.cryptogram)),
                credential: merchant(server))
            #expect(garbage.status == 502 && (garbage.json["TextResponse"] as? String)?.contains("outcome is unknown") == true)

            upstream.setAnswer(.approve)
            upstream.setDelay(RelayFixture.timeout + .seconds(2))
            let slowID = try await server.registerThroughEProtect(pan: "4457119922394000", cryptogram: Self.cryptogram)
            let start = ContinuousClock.now
            let slow = try await post(server, body(recordNo: slowID), credential: merchant(server))
            #expect(ContinuousClock.now - start < RelayFixture.timeout + .seconds(4))
            #expect(slow.status == 504 && (slow.json["TextResponse"] as? String)?.contains("outcome is unknown") == true)
            try await Task.sleep(for: .seconds(2))
            #expect(upstream.receivedMercuryPay.count == 3)

            let downID = try await server.registerThroughEProtect(pan: "4457119922394000", cryptogram: Self.cryptogram)
            try await upstream.stop()
            let down = try await post(server, body(recordNo: downID), credential: merchant(server))
            #expect(
                down.status == 503 && (down.json["TextResponse"] as? String)?.contains("nothing was sent") == true, "\(down.reply.text)")
            // Not worth retrying as is: the registration ID was spent on the attempt.
            #expect(!down.reply.headers.contains { $0.0.lowercased() == "retry-after" })
            #expect(!server.logs.text.contains("4457119922394000"))
            let metrics = try await server.operations("/metrics").text
            #expect(metrics.contains(#"format="mercurypay",outcome="timeout"} 1"#), "\(metrics)")
        }
    }

    @Test func anUpstreamEchoingTheCardDataInAnyFormGivesTheClientNone() async throws {
        try await withFixture { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let pan = "4457119922398001"
            for form in ProcessorUpstreamStandIn.CardDataEcho.allCases {
                upstream.setAnswer(.approveEchoing(form))
                let id = try await server.registerThroughEProtect(pan: pan, cryptogram: Self.cryptogram)
                let (status, json, reply) = try await post(server, body(recordNo: id), credential: merchant(server))
                let received = try #require(upstream.receivedMercuryPay.last)
                #expect(received.accountNumber == pan && received.field("Cryptogram") == Self.cryptogram)
                let leaked = RelayFixture.cardDataIn(reply.text, accountNumber: pan, cryptogram: Self.cryptogram)
                #expect(leaked.isEmpty, "\(form): \(leaked) came back in \(reply.text)")
                if form.isMaskable {
                    #expect(status == 200 && json["CmdStatus"] as? String == "Approved", "\(form): \(reply.text)")
                    #expect((json["RecordNo"] as? String)?.hasSuffix("8001") == true && json["AcctNo"] as? String == "XXXXXXXXXXXX8001")
                } else {
                    // Nothing can mask a number split across fields, in a name or as a number: the reply is refused.
                    #expect(status == 502 && json["RecordNo"] == nil, "\(form): \(status) \(reply.text)")
                }
            }
            #expect(upstream.receivedMercuryPay.count == ProcessorUpstreamStandIn.CardDataEcho.allCases.count)
            let log = server.logs.text
            #expect(!log.contains(pan) && !log.contains(Self.cryptogram))
        }
    }

    @Test func withoutAnUpstreamNothingIsRedeemed() async throws {
        try await withServer { server in
            let id = try await server.registerThroughEProtect(pan: "4457119922395007", cryptogram: Self.cryptogram)
            let (status, json, _) = try await post(server, body(recordNo: id), credential: merchant(server))
            #expect(status == 503 && json["PaywardenErrorCode"] as? String == "upstream_unavailable")
            let redeemed = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: .some(server.vaultKey))
            #expect(redeemed.status == 200, "\(redeemed.text)")
        }
    }

    @Test func upstreamSettingsAreChecked() async throws {
        let passwordFile = NSTemporaryDirectory() + "paywarden-mercurypay-password-\(UUID().uuidString.prefix(8))"
        try OwnerOnlyFile.write("s3cret\r\n", to: passwordFile)
        defer { try? FileManager.default.removeItem(atPath: passwordFile) }
        let upstream = [
            "PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM": "https://mercurypay.example.com", "PAYWARDEN_RELAY_MERCURYPAY_ORGANIZATIONS": "example",
        ]
        let refused: [([String: String], String)] = [
            (["PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM": "http://mercurypay.example.com"], "PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM"),
            (
                upstream.merging(["PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM_USER": "494901"]) { $1 },
                "PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM_PASSWORD_FILE"
            ),
            (
                ["PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM_USER": "494901", "PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM_PASSWORD_FILE": passwordFile],
                "PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM"
            ),
            (
                upstream.merging(["PAYWARDEN_RELAY_MERCURYPAY_CRYPTOGRAM_FIELD": "AcctNo"]) { $1 },
                "PAYWARDEN_RELAY_MERCURYPAY_CRYPTOGRAM_FIELD"
            ),
            (upstream.merging(["PAYWARDEN_RELAY_MERCURYPAY_ECI_FIELD": "E\"CI"]) { $1 }, "PAYWARDEN_RELAY_MERCURYPAY_ECI_FIELD"),
            (
                upstream.merging(["PAYWARDEN_RELAY_MERCURYPAY_ECI_FIELD": "X", "PAYWARDEN_RELAY_MERCURYPAY_CRYPTOGRAM_FIELD": "X"]) { $1 },
                "name the same field"
            ),
            (["PAYWARDEN_RELAY_MERCURYPAY_CRYPTOGRAM_FIELD": "Cryptogram"], "PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM"),
            (["PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM": "https://mercurypay.example.com"], "PAYWARDEN_RELAY_MERCURYPAY_ORGANIZATIONS"),
        ]
        for (environment, name) in refused {
            let error = await #expect(throws: ConfigurationError.self, "\(environment)") {
                try await PaywardenSettings.load(environment: environment)
            }
            #expect(error?.message.contains(name) == true, "\(error?.message ?? "")")
        }
        let settings = try await PaywardenSettings.load(
            environment: upstream.merging([
                "PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM_USER": "494901", "PAYWARDEN_RELAY_MERCURYPAY_UPSTREAM_PASSWORD_FILE": passwordFile,
                "PAYWARDEN_RELAY_MERCURYPAY_CRYPTOGRAM_FIELD": "Cryptogram",
            ]) { $1 })
        let configuration = try ServerConfiguration(settings: settings)
        let mercuryPay = try #require(configuration.relay.mercuryPay)
        #expect(mercuryPay.format == .mercuryPay && mercuryPay.credentials?.user == "494901")
        #expect(mercuryPay.credentials?.password.revealed == "s3cret")
        #expect(configuration.relay.mercuryPayFields == .init(cryptogramField: "Cryptogram"))
        #expect(configuration.relay.mercuryPayOrganizations == ["example"])
        #expect(!settings.effective.map(\.displayValue).contains { $0.contains("s3cret") })
    }
}
