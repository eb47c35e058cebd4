import Foundation
import NIOHTTP1
import PKCS11
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenServer
import PaywardenServices
import PaywardenStorage
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing
import Vault

/// openapi.json as the conformance tests read it: its operations ("POST /cnpAPI"), and the
/// (status, stable code) pairs each documents, written as the tests record them: "200 " for a
/// success, "404 registration_not_found" for each code an error response narrows `error.code` to.
/// (The parsed JSON is never changed after loading, hence the unchecked Sendable.)
struct OpenAPIDocument: @unchecked Sendable {
    let root: [String: Any]

    static func load() throws -> OpenAPIDocument {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("openapi.json")
        return OpenAPIDocument(root: try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]))
    }

    static let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]

    /// "/cnpAPI" of "POST /cnpAPI".
    static func path(of operation: String) -> String { String(operation.drop { $0 != " " }.dropFirst()) }

    var operations: [String] {
        let paths = root["paths"] as? [String: Any] ?? [:]
        return paths.flatMap { path, item in
            (item as? [String: Any] ?? [:]).keys.filter(Self.methods.contains).map { "\($0.uppercased()) \(path)" }
        }
        .sorted()
    }

    func operation(_ name: String) -> [String: Any] {
        let parts = name.split(separator: " ", maxSplits: 1).map(String.init)
        let item = (root["paths"] as? [String: Any])?[parts[1]] as? [String: Any]
        return item?[parts[0].lowercased()] as? [String: Any] ?? [:]
    }

    /// Follows local `$ref`s until the object has none.
    func resolve(_ object: [String: Any]) -> [String: Any] {
        guard let reference = object["$ref"] as? String, reference.hasPrefix("#/") else { return object }
        var target: Any? = root
        for component in reference.dropFirst(2).split(separator: "/") { target = (target as? [String: Any])?[String(component)] }
        return resolve(target as? [String: Any] ?? [:])
    }

    /// The schema at `#/components/schemas/name`.
    func schema(_ name: String) -> [String: Any] {
        resolve(["$ref": "#/components/schemas/\(name)"])
    }

    var stableCodes: Set<String> { Set(schema("StableCode")["enum"] as? [String] ?? []) }

    /// The codes an error response's JSON schema (`allOf` the Error schema and a narrowing of
    /// `error.code`) lists; nil for a response that is not an error body.
    func errorCodes(_ response: [String: Any]) -> [String]? {
        let content = resolve(response)["content"] as? [String: Any]
        guard let schema = (content?["application/json"] as? [String: Any])?["schema"] as? [String: Any] else { return nil }
        let members = resolve(schema)["allOf"] as? [[String: Any]] ?? []
        guard members.contains(where: { $0["$ref"] as? String == "#/components/schemas/Error" }) else { return nil }
        let narrowed: [[String]] = members.compactMap { member in
            let error = (resolve(member)["properties"] as? [String: Any])?["error"] as? [String: Any]
            return ((error?["properties"] as? [String: Any])?["code"] as? [String: Any])?["enum"] as? [String]
        }
        // An error response that narrows nothing documents no code, and matches no observation.
        return narrowed.first ?? []
    }

    func responses(_ operation: String) -> [String: [String: Any]] {
        (self.operation(operation)["responses"] as? [String: Any] ?? [:]).compactMapValues { ($0 as? [String: Any]).map(resolve) }
    }

    func documentedPairs(_ operation: String) -> Set<String> {
        Set(
            responses(operation).flatMap { status, response in
                errorCodes(response).map { codes in codes.map { "\(status) \($0)" } } ?? ["\(status) "]
            })
    }

    func documentedStatuses(_ operation: String) -> Set<Int> { Set(responses(operation).keys.compactMap { Int($0) }) }

    /// The JSON object schema `operation` documents for `status`, when it lists properties.
    func objectSchema(_ operation: String, status: Int) -> [String: Any]? {
        let content = responses(operation)[String(status)]?["content"] as? [String: Any]
        guard let schema = (content?["application/json"] as? [String: Any])?["schema"] as? [String: Any] else { return nil }
        let resolved = resolve(schema)
        return resolved["properties"] == nil ? nil : resolved
    }
}

/// The routes added for eProtect, the vault and cnpAPI against a real server on PostgreSQL:
/// every status and stable code openapi.json documents for them is produced here (an HSM and a
/// database outage, records altered at rest and a paypage removed included), and the set is
/// compared with the document, route by route.
@Suite(.serialized, .releasesTestResources)
struct OpenAPIVaultTests {
    static let paypage = "POST /eProtect/paypage"
    static let redeem = "POST /v1/registrations/{id}/redeem"
    static let endRegistration = "DELETE /v1/registrations/{id}"
    static let detokenize = "POST /v1/tokens/{token}/detokenize"
    static let deleteToken = "DELETE /v1/tokens/{token}"
    static let cnpOnline = "POST /vap/communicator/online"
    static let cnpAPI = "POST /cnpAPI"
    static let newOperations = [paypage, redeem, endRegistration, detokenize, deleteToken, cnpOnline, cnpAPI]
    /// What only a relayed cnpAPI transaction answers (an upstream broken, down or slow; the vault
    /// down): CnpRelayTests produces these against a stand-in upstream and checks them against the
    /// document; this test's server has no upstream.
    static let cnpRelayFailures: Set<String> = ["502 ", "503 ", "504 "]

    /// What a run produced.
    final class Record: Sendable {
        /// (status, code) pairs by operation.
        let pairs = Mutex<[String: Set<String>]>([:])
        /// eProtect's `response` and `paywardenCode` values.
        let eProtectResponses = Mutex<Set<String>>([])
        let paywardenCodes = Mutex<Set<String>>([])
        /// The cnpAPI envelopes' `response` attributes by operation.
        let envelopes = Mutex<[String: Set<String>]>([:])
    }

    /// Requests to one server, each checked and recorded under its operation.
    struct Client {
        let server: TestServer
        let record: Record
        let document: OpenAPIDocument
        static let form = "application/x-www-form-urlencoded"

        @discardableResult
        func expect(
            _ operation: String, _ path: String, key: String?, body: [UInt8]? = nil, contentType: String = "application/json",
            _ status: Int, _ code: String? = nil, eProtect: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
        ) async throws -> TestServer.Reply {
            let method = HTTPMethod(rawValue: String(operation.prefix { $0 != " " }))
            let reply = try await server.send(method, path, body: body, apiKey: .some(key), contentType: contentType)
            check(operation, path, reply, status, code, eProtect: eProtect, sourceLocation: sourceLocation)
            return reply
        }

        /// Checks a reply already received against the expected status and code, and the document.
        func check(
            _ operation: String, _ path: String, _ reply: TestServer.Reply, _ status: Int, _ code: String? = nil, eProtect: String? = nil,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            #expect(reply.status == status, "\(operation) \(path): \(reply.text)", sourceLocation: sourceLocation)
            #expect(reply.errorCode == code, "\(operation) \(path): \(reply.text)", sourceLocation: sourceLocation)
            let detail = (try? JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])?["error"] as? [String: Any]
            #expect(detail?["eProtectCode"] as? String == eProtect, "\(operation) \(path): \(reply.text)", sourceLocation: sourceLocation)
            if [429, 503].contains(reply.status) {
                #expect(reply.header("Retry-After").flatMap(Int.init).map { $0 >= 1 } == true, sourceLocation: sourceLocation)
            }
            if reply.status == 401 {
                #expect(reply.header("WWW-Authenticate")?.hasPrefix("Bearer") == true, sourceLocation: sourceLocation)
            }
            // A success body has the documented schema's required members and no undocumented one.
            if reply.status < 300, let schema = document.objectSchema(operation, status: reply.status) {
                let keys = Set(((try? JSONSerialization.jsonObject(with: Data(reply.body))) as? [String: Any] ?? [:]).keys)
                let required = Set(schema["required"] as? [String] ?? [])
                let properties = Set((schema["properties"] as? [String: Any] ?? [:]).keys)
                #expect(required.isSubset(of: keys), "\(operation): missing \(required.subtracting(keys))", sourceLocation: sourceLocation)
                #expect(
                    keys.isSubset(of: properties), "\(operation): undocumented \(keys.subtracting(properties))",
                    sourceLocation: sourceLocation)
            }
            _ = record.pairs.withLock { $0[operation, default: []].insert("\(reply.status) \(reply.errorCode ?? "")") }
        }

        /// An eProtect registration answered `response` (HTTP 200), with `code` as its paywardenCode.
        @discardableResult
        func register(
            _ token: [UInt8], paypage: String = TestServer.examplePaypage, reportGroup: String = "mobile", _ response: String,
            _ code: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
        ) async throws -> [String: Any] {
            let form = try EProtectForms.form(token: token, paypageID: paypage, reportGroup: reportGroup)
            let reply = try await expect(
                OpenAPIVaultTests.paypage, "/eProtect/paypage", key: nil, body: form, contentType: Self.form, 200,
                sourceLocation: sourceLocation)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])
            #expect(body["response"] as? String == response, "\(reply.text)", sourceLocation: sourceLocation)
            #expect(body["paywardenCode"] as? String == code, "\(reply.text)", sourceLocation: sourceLocation)
            _ = record.eProtectResponses.withLock { $0.insert(body["response"] as? String ?? "") }
            if let code = body["paywardenCode"] as? String { _ = record.paywardenCodes.withLock { $0.insert(code) } }
            return body
        }

        /// A cnpAPI post answered 200 with an envelope whose `response` attribute is `envelope`.
        @discardableResult
        func cnp(_ operation: String, _ body: String, envelope: String, sourceLocation: SourceLocation = #_sourceLocation)
            async throws -> String
        {
            let path = OpenAPIDocument.path(of: operation)
            let reply = try await expect(
                operation, path, key: nil, body: Array(body.utf8), contentType: "text/xml", 200, sourceLocation: sourceLocation)
            #expect(reply.header("Content-Type")?.hasPrefix("text/xml") == true, sourceLocation: sourceLocation)
            let attribute = OpenAPIVaultTests.envelopeResponse(reply.text)
            #expect(attribute == envelope, "\(reply.text)", sourceLocation: sourceLocation)
            _ = record.envelopes.withLock { $0[operation, default: []].insert(attribute ?? "") }
            return reply.text
        }
    }

    /// The `response` attribute of a cnpAPI envelope's root element.
    static func envelopeResponse(_ xml: String) -> String? {
        var text = Substring(xml)
        if text.hasPrefix("<?"), let end = text.range(of: "?>") { text = text[end.upperBound...] }
        guard let open = text.firstIndex(of: "<"), let close = text[open...].firstIndex(of: ">") else { return nil }
        let root = text[open..<close]
        guard let start = root.range(of: " response=\"") else { return nil }
        return String(root[start.upperBound...].prefix { $0 != "\"" })
    }

    func cnpEnvelope(_ password: String, user: String = "merchant-server", _ transaction: String) -> String {
        #"<?xml version="1.0" encoding="UTF-8"?><cnpOnlineRequest version="12.10" xmlns="http://www.vantivcnp.com/schema" "#
            + #"merchantId="01234"><authentication><user>\#(user)</user><password>\#(password)</password></authentication>"#
            + transaction + "</cnpOnlineRequest>"
    }

    @Test func newRoutesProduceExactlyWhatTheDocumentSays() async throws {
        let document = try OpenAPIDocument.load()
        let cluster = try TestPostgres.shared()
        let name = try cluster.database()
        let record = Record()
        try await withServer({ configuration in
            configuration.database.location = .postgres(
                DatabaseSettings.PostgresLocation(
                    host: "127.0.0.1", port: cluster.port, username: cluster.username, password: Sensitive(cluster.password),
                    database: name, sslMode: .disable, displayURL: cluster.url(database: name)))
            configuration.database.autoMigrate = true
            configuration.database.statementTimeout = .milliseconds(500)
            configuration.maxBodyBytes = 16 * 1024
            // A burst of 10 a paypage: what this test registers fits; the flood below does not.
            configuration.eProtectRatePerPaypage = 5
        }) { server in
            try await exercise(server, Client(server: server, record: record, document: document), cluster: cluster, database: name)
            // The server's route templates are the document's paths.
            let metrics = try await server.operations("/metrics").text
            let routes = Set(
                metrics.split(separator: "\n").filter { $0.hasPrefix("paywarden_http_requests_total{") }.compactMap { line in
                    line.range(of: "route=\"").map { String(line[$0.upperBound...].prefix { $0 != "\"" }) }
                })
            let documentedPaths = Set(document.operations.map { OpenAPIDocument.path(of: $0) })
            for operation in Self.newOperations {
                #expect(
                    routes.contains(OpenAPIDocument.path(of: operation)), "\(operation) is not a route: \(routes.sorted())")
            }
            let undocumented = routes.subtracting(documentedPaths).subtracting(["unmatched"])
            #expect(undocumented.isEmpty, "routes the document lacks: \(undocumented.sorted())")
        }

        // An HSM that cannot protect data keys (no AES key wrap, no AES-GCM): every vault route is
        // refused for good, before any record is looked at.
        let device = try FaultInjectingPKCS11.make()
        try device.refuse(.aesKeyWrapPad)
        try device.refuse(.aesGCM)
        try await withServer({ $0.hsm.modulePath = device.modulePath }) { server in
            let client = Client(server: server, record: record, document: document)
            let (id, token, vault) = (RegistrationID.generate().value, "4111110000001111", server.vaultKey)
            #expect(CardVault.isWellFormedToken(token))
            let missing = "hsm_capability_missing"
            try await client.expect(Self.redeem, "/v1/registrations/\(id)/redeem", key: vault, 501, missing, eProtect: "889")
            try await client.expect(Self.endRegistration, "/v1/registrations/\(id)", key: vault, 501, missing, eProtect: "889")
            try await client.expect(Self.detokenize, "/v1/tokens/\(token)/detokenize", key: vault, 501, missing, eProtect: "889")
            try await client.expect(Self.deleteToken, "/v1/tokens/\(token)", key: vault, 501, missing, eProtect: "889")
            try await client.register(try server.ecToken(), "889", missing)
        }

        for operation in Self.newOperations {
            let documented = document.documentedPairs(operation)
            var observed = record.pairs.withLock { $0[operation] ?? [] }
            if [Self.cnpOnline, Self.cnpAPI].contains(operation) { observed.formUnion(Self.cnpRelayFailures) }
            #expect(documented == observed, "\(operation): documented \(documented.sorted()) vs produced \(observed.sorted())")
            #expect(!documented.isEmpty)
        }
        // eProtect's response codes, and the stable codes its replies carry.
        let reply = document.schema("EProtectReply")["properties"] as? [String: Any]
        let responses = Set((reply?["response"] as? [String: Any])?["enum"] as? [String] ?? [])
        let observedResponses = record.eProtectResponses.withLock { $0 }
        #expect(responses == observedResponses, "documented \(responses.sorted()) vs produced \(observedResponses.sorted())")
        let paywardenCodes = Set((reply?["paywardenCode"] as? [String: Any])?["enum"] as? [String] ?? [])
        #expect(record.paywardenCodes.withLock { $0 }.isSubset(of: paywardenCodes))
        #expect(paywardenCodes.isSubset(of: document.stableCodes))
        // cnpAPI envelopes: each documented example's response attribute, and no other, on both paths.
        let examples = document.schema("CnpOnlineResponse")["examples"] as? [String] ?? []
        let documentedEnvelopes = Set(examples.compactMap(Self.envelopeResponse))
        #expect(documentedEnvelopes.count == examples.count, "an example without a response attribute")
        for operation in [Self.cnpOnline, Self.cnpAPI] {
            let observed = record.envelopes.withLock { $0[operation] ?? [] }
            #expect(
                documentedEnvelopes == observed, "\(operation): documented \(documentedEnvelopes.sorted()) vs produced \(observed.sorted())"
            )
        }
        // Every stable code is one some route documents, and every code documented is stable.
        let errorCodes = Set(
            document.operations.flatMap { operation in
                document.documentedPairs(operation).compactMap { $0.split(separator: " ").dropFirst().first }
            }
            .map(String.init))
        #expect(
            errorCodes.union(paywardenCodes) == document.stableCodes,
            "\(document.stableCodes.symmetricDifference(errorCodes.union(paywardenCodes)))")
    }

    private func exercise(_ server: TestServer, _ client: Client, cluster: TestPostgres, database name: String) async throws {
        let vault = server.vaultKey
        func token(_ pan: String) throws -> [UInt8] { try server.ecToken(payload: PaymentPayloads.threeDSecure(pan: pan)) }

        // eProtect: each response code, too large, and rate-limited.
        let idA = try #require(try await client.register(try token("4111111111111111"), "870")["paypageRegistrationId"] as? String)
        let idB = try #require(try await client.register(try token("4000056655665556"), "870")["paypageRegistrationId"] as? String)
        _ = try await server.server.vault.createPaypage(
            id: "retiredPaypage", organization: "example", merchantIdentifiers: [try #require(server.ecMerchant.merchantID)],
            reportGroups: [], tokenFormat: .t)
        let idC = try #require(
            try await client.register(try token("4000000000000002"), paypage: "retiredPaypage", "870")["paypageRegistrationId"] as? String)
        // The outages below register through a paypage of their own: the flood drains the example
        // paypage's bucket, and on a fast machine it may not have refilled by then.
        _ = try await server.server.vault.createPaypage(
            id: "outagePaypage", organization: "example", merchantIdentifiers: [try #require(server.ecMerchant.merchantID)],
            reportGroups: [], tokenFormat: .t)
        try await client.register(try server.ecToken(), paypage: "nosuchpaypage", "879", "merchant_not_authorized")
        try await client.register(
            try server.ecToken(), paypage: TestServer.rivalPaypage, reportGroup: "other", "880", "report_group_invalid")
        var stale = TokenForge.Options()
        stale.signingTime = Date().addingTimeInterval(-3600)
        try await client.register(try server.ecToken(options: stale), "888", "signing_time_out_of_window")
        let once = try server.ecToken()
        try await client.register(once, "870")
        try await client.register(once, "889", "replayed_transaction")
        let noPAN = Array(#"{"applicationExpirationDate":"291231","paymentDataType":"3DSecure","paymentData":{}}"#.utf8)
        try await client.register(try server.ecToken(payload: noPAN), "889", "invalid_account_number")
        try await client.expect(
            Self.paypage, "/eProtect/paypage", key: nil, body: [UInt8](repeating: 0x61, count: 17 * 1024), contentType: Client.form, 413,
            "payload_too_large")
        // The paypage limit counts tokens that spend their transaction id for one of its merchants:
        // fresh ones, forged first, drain its bucket (a replayed one would not).
        let flood = try (0..<40).map { _ in try EProtectForms.form(token: try server.ecToken(), paypageID: TestServer.examplePaypage) }
        // The refused reply itself is checked: on a slow machine a later request could find a token
        // refilled (5 a second) and be answered.
        var limited: TestServer.Reply?
        for form in flood where limited == nil {
            let reply = try await server.send(.POST, "/eProtect/paypage", body: form, apiKey: .some(nil), contentType: Client.form)
            if reply.status == 429 { limited = reply }
        }
        client.check(
            Self.paypage, "/eProtect/paypage", try #require(limited, "a burst past the paypage's rate must be refused"), 429, "rate_limited"
        )

        // Redeem and end registrations.
        let redeemed = try await client.expect(Self.redeem, "/v1/registrations/\(idA)/redeem", key: vault, 200)
        let tokenA = try #require(
            ((try JSONSerialization.jsonObject(with: Data(redeemed.body)) as? [String: Any])?["highValueToken"] as? [String: Any])?["token"]
                as? String)
        try await client.expect(Self.redeem, "/v1/registrations/\(idA)/redeem", key: nil, 401, "unauthorized")
        try await client.expect(Self.redeem, "/v1/registrations/\(idA)/redeem", key: server.decryptKey, 403, "forbidden")
        try await client.expect(
            Self.redeem, "/v1/registrations/1234567890123456789/redeem", key: vault, 404, "registration_not_found", eProtect: "877")
        // An operator removed the paypage C was registered through.
        try Self.psql(cluster, database: name, "DELETE FROM paypages WHERE id = 'retiredPaypage'")
        try await client.expect(Self.redeem, "/v1/registrations/\(idC)/redeem", key: vault, 403, "merchant_not_authorized", eProtect: "879")
        try await client.expect(Self.endRegistration, "/v1/registrations/\(idA)", key: vault, 204)
        try await client.expect(Self.endRegistration, "/v1/registrations/\(idA)", key: vault, 410, "registration_expired", eProtect: "878")
        try await client.expect(Self.redeem, "/v1/registrations/\(idA)/redeem", key: vault, 410, "registration_expired", eProtect: "878")
        try await client.expect(
            Self.endRegistration, "/v1/registrations/1234567890123456789", key: vault, 404, "registration_not_found", eProtect: "877")
        try await client.expect(Self.endRegistration, "/v1/registrations/\(idB)", key: nil, 401, "unauthorized")
        try await client.expect(Self.endRegistration, "/v1/registrations/\(idB)", key: server.decryptKey, 403, "forbidden")

        // cnpAPI on both paths: each envelope response, and too large.
        for operation in [Self.cnpOnline, Self.cnpAPI] {
            let byID =
                #"<registerTokenRequest id="t1" reportGroup="web"><paypageRegistrationId>\#(idB)</paypageRegistrationId>"#
                + "</registerTokenRequest>"
            let valid = try await client.cnp(operation, cnpEnvelope(vault, byID), envelope: "0")
            #expect(valid.contains("<response>801</response>") || valid.contains("<response>802</response>"), "\(valid)")
            try await client.cnp(operation, cnpEnvelope(vault, #"<noSuchRequest id="t2"/>"#), envelope: "1")
            try await client.cnp(operation, #"{"json":true}"#, envelope: "2")
            try await client.cnp(operation, cnpEnvelope("pw_wrong", byID), envelope: "3")
            let entity =
                #"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "a">]>"#
                + #"<cnpOnlineRequest xmlns="http://www.vantivcnp.com/schema" version="12.10">&a;</cnpOnlineRequest>"#
            try await client.cnp(operation, entity, envelope: "5")
            let path = OpenAPIDocument.path(of: operation)
            try await client.expect(
                operation, path, key: nil, body: Array(cnpEnvelope(vault, String(repeating: " ", count: 17 * 1024)).utf8),
                contentType: "text/xml", 413, "payload_too_large")
        }

        // Detokenize and delete tokens, with a token unlinked and one altered at rest.
        let redeemedB = try await client.expect(Self.redeem, "/v1/registrations/\(idB)/redeem", key: vault, 200)
        let tokenB = try #require(
            ((try JSONSerialization.jsonObject(with: Data(redeemedB.body)) as? [String: Any])?["highValueToken"] as? [String: Any])?[
                "token"]
                as? String)
        try await client.expect(Self.detokenize, "/v1/tokens/\(tokenA)/detokenize", key: vault, 200)
        try await client.expect(Self.detokenize, "/v1/tokens/\(tokenA)/detokenize", key: nil, 401, "unauthorized")
        try await client.expect(Self.detokenize, "/v1/tokens/\(tokenA)/detokenize", key: server.redeemOnlyKey, 403, "forbidden")
        try await client.expect(
            Self.detokenize, "/v1/tokens/4111111111111111/detokenize", key: vault, 404, "token_not_found", eProtect: "822")
        let database = server.server.database.database
        let row = try #require(try await database.token(tokenA, organization: "example"))
        _ = try await database.updateToken(tokenA, organization: "example", state: .unlinked, sealed: nil, at: Date())
        try await client.expect(Self.detokenize, "/v1/tokens/\(tokenA)/detokenize", key: vault, 410, "token_unlinked", eProtect: "823")
        var altered = row.sealed
        altered.ciphertext[altered.ciphertext.count - 1] ^= 1
        _ = try await database.updateToken(tokenA, organization: "example", state: .active, sealed: altered, at: Date())
        try await client.expect(Self.detokenize, "/v1/tokens/\(tokenA)/detokenize", key: vault, 500, "internal_error", eProtect: "889")
        try await client.expect(Self.deleteToken, "/v1/tokens/\(tokenA)", key: nil, 401, "unauthorized")
        try await client.expect(Self.deleteToken, "/v1/tokens/\(tokenA)", key: server.redeemOnlyKey, 403, "forbidden")
        try await client.expect(Self.deleteToken, "/v1/tokens/\(tokenA)", key: vault, 204)
        try await client.expect(Self.deleteToken, "/v1/tokens/\(tokenA)", key: vault, 404, "token_not_found", eProtect: "822")
        // Every live registration's payload altered at rest: B no longer opens.
        let keys = try await database.keyUsage().filter { $0.use == .registrationPayloads }
        for key in keys {
            for registration in try await database.registrations(sealedWith: key.keyID, limit: 100) {
                guard var sealed = registration.sealed else { continue }
                sealed.ciphertext[sealed.ciphertext.count - 1] ^= 1
                #expect(try await database.resealRegistration(lookupKey: registration.lookupKey, previousKeyID: key.keyID, sealed: sealed))
            }
        }
        try await client.expect(Self.redeem, "/v1/registrations/\(idB)/redeem", key: vault, 500, "internal_error", eProtect: "889")

        // The HSM's token is gone: 503 hsm_unavailable, and eProtect's 889.
        let store = try #require(server.token.storeDirectory())
        let hidden = server.token.directory + "/away-" + UUID().uuidString
        try FileManager.default.moveItem(atPath: store, toPath: hidden)
        #expect(try await server.waitForReadiness(503), "readiness must fall while the token is gone")
        try await client.expect(Self.redeem, "/v1/registrations/\(idB)/redeem", key: vault, 503, "hsm_unavailable", eProtect: "889")
        try await client.expect(Self.endRegistration, "/v1/registrations/\(idB)", key: vault, 503, "hsm_unavailable", eProtect: "889")
        try await client.expect(Self.detokenize, "/v1/tokens/\(tokenB)/detokenize", key: vault, 503, "hsm_unavailable", eProtect: "889")
        try await client.register(try server.ecToken(), paypage: "outagePaypage", "889", "hsm_unavailable")
        try FileManager.default.moveItem(atPath: hidden, toPath: store)
        #expect(try await server.waitForReadiness(200), "readiness must come back with the token")

        // The database refuses connections: 503 database_unavailable, and eProtect's 889. Each
        // waits out the statement timeout, so they are sent at once.
        try Self.psql(
            cluster, database: "postgres", "ALTER DATABASE \(name) ALLOW_CONNECTIONS false",
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
        let ecToken = try server.ecToken()
        async let redeemDown = client.expect(
            Self.redeem, "/v1/registrations/\(idB)/redeem", key: vault, 503, "database_unavailable", eProtect: "889")
        async let endDown = client.expect(
            Self.endRegistration, "/v1/registrations/\(idB)", key: vault, 503, "database_unavailable", eProtect: "889")
        async let detokenizeDown = client.expect(
            Self.detokenize, "/v1/tokens/\(tokenB)/detokenize", key: vault, 503, "database_unavailable", eProtect: "889")
        async let deleteDown = client.expect(
            Self.deleteToken, "/v1/tokens/\(tokenB)", key: vault, 503, "database_unavailable", eProtect: "889")
        async let registerDown = client.register(ecToken, paypage: "outagePaypage", "889", "database_unavailable")
        _ = try await (redeemDown, endDown, detokenizeDown, deleteDown, registerDown)
        try Self.psql(cluster, database: "postgres", "ALTER DATABASE \(name) ALLOW_CONNECTIONS true")
    }

    /// Every operation in the document is routed: without a key or a body it answers a status the
    /// document lists for it, and a 404 only with a stable code (a route's, not the router's).
    @Test func everyDocumentedRouteIsServed() async throws {
        let document = try OpenAPIDocument.load()
        try await withServer { server in
            for operation in document.operations {
                let path = OpenAPIDocument.path(of: operation)
                    .replacingOccurrences(of: "{id}", with: "1234567890123456789").replacingOccurrences(
                        of: "{token}", with: "4111111111111111"
                    ).replacingOccurrences(of: "{merchantId}", with: "merchant.com.example").replacingOccurrences(
                        of: "{eventId}", with: "event-1"
                    ).replacingOccurrences(of: "{StoreID}", with: "TMSUS")
                let method = HTTPMethod(rawValue: String(operation.prefix { $0 != " " }))
                let reply = try await server.send(method, path, apiKey: .some(nil))
                #expect(document.documentedStatuses(operation).contains(reply.status), "\(operation): \(reply.status) \(reply.text)")
                #expect(reply.status != 404 || reply.errorCode != nil, "\(operation) is not routed")
            }
            let unrouted = try await server.send(.POST, "/v1/registrations", apiKey: .some(nil))
            #expect(unrouted.status == 404 && unrouted.errorCode == nil, "a path the document does not list: \(unrouted.text)")
        }
    }

    /// Runs SQL on the test cluster with psql, as an operator (or an outage) would.
    static func psql(_ cluster: TestPostgres, database: String, _ statements: String...) throws {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let binary =
            versions.sorted { $0.compare($1, options: .numeric) == .orderedDescending }.map { "\(root)/\($0)/bin/psql" }
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/psql"
        var arguments = [
            "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(cluster.port)", "-U", cluster.username, "-d", database,
        ]
        for statement in statements { arguments += ["-c", statement] }
        let output = try ChildProcess.run(binary, arguments, environment: ["PGPASSWORD": cluster.password, "PATH": "/usr/bin:/bin"])
        #expect(output.status == 0, "psql: \(output.stderr)")
    }
}
