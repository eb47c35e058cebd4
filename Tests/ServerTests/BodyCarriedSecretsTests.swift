import Foundation
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// Registration IDs and high-value tokens are bearer secrets: every route that takes one has a
/// form carrying it in the body, where proxies' access logs do not keep it. The path forms stay.
@Suite(.serialized, .releasesTestResources)
struct BodyCarriedSecretsTests {
    func register(_ server: TestServer) async throws -> String {
        let reply = try await server.send(
            .POST, "/eProtect/paypage", body: try EProtectForms.form(token: try server.ecToken(), paypageID: TestServer.examplePaypage),
            apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
        let body = try #require(try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])
        return try #require(body["paypageRegistrationId"] as? String, "\(reply.text)")
    }

    func json(_ object: [String: String]) throws -> [UInt8] { Array(try JSONSerialization.data(withJSONObject: object)) }

    @Test func everySecretCanTravelInTheBody() async throws {
        try await withServer { server in
            let id = try await register(server)
            let redeemed = try await server.send(
                .POST, "/v1/registrations/redeem", body: try json(["registrationId": id]), apiKey: server.vaultKey)
            #expect(redeemed.status == 200, "\(redeemed.text)")
            let body = try #require(try JSONSerialization.jsonObject(with: Data(redeemed.body)) as? [String: Any])
            let token = try #require((body["highValueToken"] as? [String: Any])?["token"] as? String)
            // The same answer as the path form gives.
            let again = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey)
            #expect(again.status == 200)

            let account = try await server.send(.POST, "/v1/tokens/detokenize", body: try json(["token": token]), apiKey: server.vaultKey)
            #expect(account.status == 200 && account.text.contains("accountNumber"), "\(account.text)")
            // Another organisation's key: as unknown as on the path form.
            let rival = try await server.send(.POST, "/v1/tokens/detokenize", body: try json(["token": token]), apiKey: server.rivalKey)
            #expect(rival.status == 404 && rival.errorCode == "token_not_found")

            let ended = try await server.send(
                .POST, "/v1/registrations/end", body: try json(["registrationId": id]), apiKey: server.vaultKey)
            #expect(ended.status == 204, "\(ended.text)")
            #expect(try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.vaultKey).status == 410)

            let deleted = try await server.send(.POST, "/v1/tokens/delete", body: try json(["token": token]), apiKey: server.vaultKey)
            #expect(deleted.status == 204, "\(deleted.text)")
            let gone = try await server.send(.POST, "/v1/tokens/detokenize", body: try json(["token": token]), apiKey: server.vaultKey)
            #expect(gone.status == 404 || gone.status == 410, "\(gone.text)")

            // A body without its member, or not JSON, is a typed 400.
            for bad in [Array("{}".utf8), Array("not json".utf8), try json(["registrationId": ""])] {
                let reply = try await server.send(.POST, "/v1/registrations/redeem", body: bad, apiKey: server.vaultKey)
                #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(reply.text)")
            }
            // The log names the route template only: the body form leaves no secret in it either.
            #expect(!server.logs.text.contains(id) && !server.logs.text.contains(token))
        }
    }
}
