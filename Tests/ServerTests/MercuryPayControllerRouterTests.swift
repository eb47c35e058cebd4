import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PaywardenServices
import ProcessorMessages
import Testing

@testable import PaywardenServer

/// MercuryPay's routes on a router of their own, without an upstream (nothing to stand in for):
/// every refusal in MercuryPay's JSON shape with the stable code, in the order a client would
/// fix them: credentials, scope, the message, the missing upstream. Nothing is redeemed.
struct MercuryPayControllerRouterTests {
    static let merchant = APIKey.generate(name: "merchant-server", scopes: [.redeem], organization: "acme")
    static let decryptOnly = APIKey.generate(name: "decrypt-only", scopes: [.decrypt], organization: "acme")
    static let sale =
        #"{"OperatorID":"test","InvoiceNo":"10042","RefNo":"10042","Memo":"router test","Purchase":"19.99","#
        + #""Tax":"1.60","TokenType":"RegistrationID","RecordNo":"0467483476571386945","Frequency":"OneTime"}"#

    static func basic(_ key: (key: String, entry: String), _ name: String) -> String {
        "Basic " + Data("\(name):\(key.key)".utf8).base64EncodedString()
    }

    func execute(
        _ client: some TestClientProtocol, authorization: String?, body: String = sale
    ) async throws -> (status: HTTPResponse.Status, headers: HTTPFields, json: [String: Any]) {
        let headers: HTTPFields = authorization.map { [.authorization: $0, .contentType: "application/json"] } ?? [:]
        return try await client.execute(
            uri: "/PaymentsAPI/Credit/SaleByRecordNo", method: .post, headers: headers, body: ByteBuffer(string: body)
        ) { response in
            let json = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]) ?? [:]
            return (response.status, response.headers, json)
        }
    }

    @Test func refusalsComeInMercuryPaysShapeWithTheStableCode() async throws {
        let registry = APIKeyRegistry(keys: [try APIKey(entry: Self.merchant.entry), try APIKey(entry: Self.decryptOnly.entry)])
        let router = Router(context: PaywardenRequestContext.self)
        let controller = MercuryPayController(maxBodyBytes: 4096, relay: nil)
        router.group().add(middleware: BearerAPIKeyAuthenticator(registry: registry)).add(
            middleware: BasicAPIKeyAuthenticator(registry: registry)
        )
        .post(RouterPath(MercuryPayOperation.saleByRecordNo.path), use: controller.saleByRecordNo)
        try await Application(router: router).test(.router) { client in
            let anonymous = try await execute(client, authorization: nil)
            #expect(anonymous.status == .unauthorized && anonymous.json["PaywardenErrorCode"] as? String == "unauthorized")
            #expect(anonymous.json["CmdStatus"] as? String == "Error" && anonymous.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)

            let unscoped = try await execute(client, authorization: Self.basic(Self.decryptOnly, "decrypt-only"))
            #expect(unscoped.status == .forbidden && unscoped.json["PaywardenErrorCode"] as? String == "forbidden")

            let malformed = try await execute(client, authorization: Self.basic(Self.merchant, "merchant-server"), body: #"{"RecordNo":1}"#)
            #expect(malformed.status == .badRequest && malformed.json["PaywardenErrorCode"] as? String == "invalid_request")

            let noUpstream = try await execute(client, authorization: "Bearer \(Self.merchant.key)")
            #expect(
                noUpstream.status == .serviceUnavailable && noUpstream.json["PaywardenErrorCode"] as? String == "upstream_unavailable",
                "\(noUpstream.json)")
            #expect(noUpstream.json["InvoiceNo"] as? String == "10042")
            #expect((noUpstream.json["TextResponse"] as? String)?.contains("nothing was redeemed or sent") == true, "\(noUpstream.json)")
        }
    }
}
