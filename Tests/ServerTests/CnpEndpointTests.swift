import Foundation
import PaywardenTestTraits
import PaywardenTesting
import Testing
import Vault

/// cnpAPI `registerTokenRequest` over HTTP, in both namespaces, with an Apple Pay token or a
/// paypage registration ID, and the hostile XML the parser must refuse without harm.
@Suite(.serialized, .releasesTestResources)
struct CnpEndpointTests {
    typealias Namespace = CnpTestMessages.Namespace

    func applePay(_ token: [UInt8]) throws -> String {
        #"<registerTokenRequest id="t1" reportGroup="web" customerId="c1"><orderId>o-1</orderId>"#
            + "\(try CnpTestMessages.applePayElement(token))</registerTokenRequest>"
    }

    func byRegistrationID(_ id: String, transaction: String) -> String {
        #"<registerTokenRequest id="\#(transaction)" reportGroup="web">"#
            + "<paypageRegistrationId>\(id)</paypageRegistrationId></registerTokenRequest>"
    }

    func post(_ server: TestServer, _ body: [UInt8], path: String = "/vap/communicator/online") async throws -> String {
        let reply = try await server.send(.POST, path, body: body, apiKey: .some(nil), contentType: "text/xml")
        #expect(reply.status == 200)
        return reply.text
    }

    @Test(arguments: Namespace.allCases)
    func registerTokenRequestWithApplePayThenWithARegistrationID(_ namespace: Namespace) async throws {
        try await withServer { server in
            let pan = "4457119922390123"
            let reply = try await post(
                server,
                CnpTestMessages.envelope(
                    namespace, password: server.vaultKey, try applePay(try server.ecToken(payload: PaymentPayloads.threeDSecure(pan: pan))))
            )
            #expect(
                reply.contains("xmlns=\"\(namespace.rawValue)\"") && reply.contains("<registerTokenResponse id=\"t1\" reportGroup=\"web\""))
            #expect(element("response", in: reply) == "801", "\(reply)")
            let token = try #require(element(namespace.tokenElement, in: reply))
            #expect(token.count == 16 && token.hasPrefix("445711") && token.hasSuffix("0123") && Luhn.isModTenPlusOne(token))
            #expect(element("bin", in: reply) == "445711" && element("type", in: reply) == "VI")
            #expect(element("onlinePaymentCryptogram", in: reply) == "AgAAAAAABk4DWZ4C28yUQAAAAAA=")
            #expect(element("applicationExpirationDate", in: reply) == "291231" && !reply.contains(pan))

            // The same account through eProtect and a registration ID: previously registered, same token.
            let form = try EProtectForms.form(
                token: try server.ecToken(payload: PaymentPayloads.threeDSecure(pan: pan)), paypageID: TestServer.examplePaypage)
            let registered = try await server.send(
                .POST, "/eProtect/paypage", body: form, apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
            let id = try #require(
                (try JSONSerialization.jsonObject(with: Data(registered.body)) as? [String: Any])?["paypageRegistrationId"] as? String)
            let byID = try await post(
                server,
                CnpTestMessages.envelope(
                    namespace, password: server.vaultKey,
                    byRegistrationID(id, transaction: "t2")
                ),
                path: "/cnpAPI")
            #expect(element("response", in: byID) == "802" && element(namespace.tokenElement, in: byID) == token)
            #expect(element(namespace == .cnp ? "cnpTxnId" : "litleTxnId", in: byID)?.count == 18)

            // An unknown registration ID, and another organisation's key: 877, no token.
            let unknown = try await post(
                server,
                CnpTestMessages.envelope(
                    namespace, user: "rival-server", password: server.rivalKey,
                    byRegistrationID(id, transaction: "t3")
                ))
            #expect(element("response", in: unknown) == "877" && element(namespace.tokenElement, in: unknown) == nil)
        }
    }

    @Test func credentialsAndHostileXMLAreRefused() async throws {
        try await withServer { server in
            let request =
                #"<registerTokenRequest id="t" reportGroup="g"><paypageRegistrationId>1</paypageRegistrationId></registerTokenRequest>"#
            // Wrong password, a user that is not the key's name, a key without the redeem scope.
            for (user, password) in [("merchant-server", "pw_wrong"), ("payments", server.vaultKey), ("payments", server.decryptKey)] {
                let reply = try await post(server, CnpTestMessages.envelope(.cnp, user: user, password: password, request))
                #expect(reply.contains("response=\"3\"") && !reply.contains("registerTokenResponse"))
            }
            let hostile: [(String, String)] = [
                (
                    "entity expansion",
                    #"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>"#
                        + #"<cnpOnlineRequest xmlns="http://www.vantivcnp.com/schema" version="12.10">&b;</cnpOnlineRequest>"#
                ),
                (
                    "external entity",
                    #"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>"#
                        + #"<cnpOnlineRequest xmlns="http://www.vantivcnp.com/schema" version="12.10">&x;</cnpOnlineRequest>"#
                ),
                (
                    "deep nesting",
                    "<cnpOnlineRequest xmlns=\"http://www.vantivcnp.com/schema\" version=\"12.10\">" + String(repeating: "<a>", count: 5000)
                        + String(repeating: "</a>", count: 5000) + "</cnpOnlineRequest>"
                ),
                (
                    "huge text",
                    "<cnpOnlineRequest xmlns=\"http://www.vantivcnp.com/schema\" version=\"12.10\"><a>"
                        + String(repeating: "x", count: 60_000) + "</a></cnpOnlineRequest>"
                ),
                ("not XML", "{\"json\":true}"),
            ]
            for (name, body) in hostile {
                let reply = try await server.send(
                    .POST, "/vap/communicator/online", body: Array(body.utf8), apiKey: .some(nil), contentType: "text/xml")
                #expect(reply.status == 200 || reply.status == 413, "\(name)")
                if reply.status == 200 {
                    #expect(reply.text.contains("response=\"") && !reply.text.contains("response=\"0\""), "\(name): \(reply.text)")
                    #expect(!reply.text.contains("root:") && !reply.text.contains("aaaaaaaaaa"), "\(name)")
                }
            }
            // The service is unharmed.
            #expect(try await server.operations("/readyz").status == 200)
        }
    }
}
