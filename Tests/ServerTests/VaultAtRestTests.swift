import Foundation
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The database alone reveals no account number: after the whole flow on each database, the
/// SQLite files (WAL included) and a PostgreSQL dump are searched for every secret that passed.
@Suite(.serialized, .releasesTestResources)
struct VaultAtRestTests {
    enum Engine: String, CaseIterable {
        case sqlite
        case postgres
    }

    @Test(arguments: Engine.allCases)
    func theDatabaseAloneRevealsNoAccountNumberOrCryptogram(_ engine: Engine) async throws {
        let cluster = engine == .postgres ? try TestPostgres.shared() : nil
        let name = try cluster?.database()
        try await withServer({ configuration in
            if let cluster, let name {
                configuration.database.location = .postgres(
                    DatabaseSettings.PostgresLocation(
                        host: "127.0.0.1", port: cluster.port, username: cluster.username, password: Sensitive(cluster.password),
                        database: name, sslMode: .disable, displayURL: cluster.url(database: name)))
                configuration.database.autoMigrate = true
            }
        }) { server in
            // Distinctive values, so a match cannot be a coincidence.
            let pan = "4929123456789012"
            let cryptogram = "QVRSRVNUVEVTVENSWVBUT0dSQU0="
            let payload = PaymentPayloads.threeDSecure(pan: pan, cryptogram: cryptogram)
            let form = try EProtectForms.form(token: try server.ecToken(payload: payload), paypageID: TestServer.examplePaypage)
            let registered = try await server.send(
                .POST, "/eProtect/paypage", body: form, apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
            let id = try #require(
                (try JSONSerialization.jsonObject(with: Data(registered.body)) as? [String: Any])?["paypageRegistrationId"] as? String)
            let redeemed = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey)
            #expect(redeemed.status == 200 && redeemed.text.contains(cryptogram))
            let token = try #require(
                ((try JSONSerialization.jsonObject(with: Data(redeemed.body)) as? [String: Any])?["highValueToken"] as? [String: Any])?[
                    "token"]
                    as? String)
            #expect(try await server.send(.POST, "/v1/tokens/\(token)/detokenize", apiKey: server.vaultKey).text.contains(pan))

            let stored: String
            switch server.server.configuration.database.location {
            case .sqlite(let path):
                let files = [path, path + "-wal"].compactMap { FileManager.default.contents(atPath: $0) }
                #expect(!files.isEmpty)
                stored = files.map { String(decoding: $0, as: UTF8.self) }.joined()
            default:
                let database = try #require(name)
                stored = try #require(try cluster?.dump(database: database))
                #expect(stored.contains("registrations") && stored.contains("high_value_tokens"))
            }
            for secret in [pan, cryptogram, id, "AAAAAABk4DWZ4C28yUQ", Data(pan.utf8).base64EncodedString(), Hex.encode(Array(pan.utf8))] {
                #expect(!stored.contains(secret), "the \(engine) database holds a secret in clear")
            }
            // The token itself is stored (it is what rows are found by); it is not the account number.
            #expect(token != pan)
        }
    }
}
