import AsyncHTTPClient
import Crypto
import Foundation
import NIOSSL
import OutboundTLS
import PaywardenTestTraits
import PaywardenTesting
import Testing
import X509

@Suite(.serialized, .releasesTestResources)
struct MerchantTokenCallTests {
    let merchant = GatewayFixture.merchantID

    @Test func unlinkAndUpdateNotificationURLSendApplesBodies() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        try await fixture.withClient { client in
            try await client.unlink(merchantID: merchant, merchantTokenID: "DNITHE000000000000000001")
            try await client.updateNotificationURL(
                merchantID: merchant, merchantTokenID: "DNITHE000000000000000001",
                url: "https://pay.example.com/v1/apple-pay/\(merchant)")
        }
        let requests = fixture.standIn.requests
        try #require(requests.count == 2)
        let unlink = requests[0]
        #expect(unlink.method == "POST")
        #expect(unlink.path == "/paymentservices/v1/merchantId/\(merchant)/merchantToken/unlink")
        #expect(String(decoding: unlink.body, as: UTF8.self) == #"{"merchantTokenIdentifier":"DNITHE000000000000000001"}"#)
        let update = requests[1]
        #expect(update.method == "POST")
        #expect(update.path == "/paymentservices/v1/merchantId/\(merchant)/merchantToken/updateMerchantMetadata")
        #expect(
            String(decoding: update.body, as: UTF8.self)
                == #"{"merchantMetadata":{"tokenNotificationURL":"https://pay.example.com/v1/apple-pay/\#(merchant)"},"#
                + #""merchantTokenIdentifier":"DNITHE000000000000000001"}"#)
        for request in requests {
            #expect(request.header("content-type") == "application/json")
            #expect(request.header("accept") == "application/json")
            #expect(UUID(uuidString: request.header("x-request-id") ?? "") != nil)
        }
        #expect(Set(requests.compactMap { $0.header("x-request-id") }).count == 2, "a fresh request id per call")
    }

    @Test func badArgumentsAreRefusedBeforeSending() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        try await fixture.withClient { client in
            for url in [
                "http://pay.example.com/n", "ftp://pay.example.com", "https://",
                "https://pay.example.com/" + String(repeating: "p", count: 2050),
            ] {
                let error = await gatewayError {
                    try await client.updateNotificationURL(merchantID: merchant, merchantTokenID: "MT-1", url: url)
                }
                #expect(error?.code == .invalidRequest, "\(url)")
            }
            for token in ["", "MT 1", String(repeating: "M", count: 65)] {
                let error = await gatewayError { try await client.unlink(merchantID: merchant, merchantTokenID: token) }
                #expect(error?.code == .invalidRequest)
            }
        }
        #expect(fixture.standIn.requests.isEmpty)
    }

    /// The stand-in checks what Apple checks: without `x-request-id` and the JSON content type,
    /// 400 (a software client key with a certificate from the CA, so the headers are ours to choose).
    @Test func theStandInRequiresApplesHeaders() async throws {
        let fixture = try await GatewayFixture.make()
        fixture.standIn.setEvent("e-1", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: "MT-1"))
        let key = P256.Signing.PrivateKey()
        let certificate = try fixture.ca.issue(publicKey: Certificate.PublicKey(key.publicKey), merchantID: merchant, purpose: .identity)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates([fixture.standIn.serverCA])]
        tls.certificateChain = [.certificate(try NIOSSLCertificate(bytes: certificate, format: .der))]
        tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem))
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(tlsConfiguration: tls))
        let url = fixture.standIn.baseURL.absoluteString + "/paymentservices/v1/merchantId/\(merchant)/merchantToken/event/e-1"
        var statuses: [UInt] = []
        for headers in [
            [], [("Content-Type", "application/json")], [("x-request-id", UUID().uuidString)],
            [("Content-Type", "application/json"), ("x-request-id", "not-a-uuid")],
            [("Content-Type", "application/json"), ("x-request-id", UUID().uuidString)],
        ] {
            var request = HTTPClientRequest(url: url)
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            do {
                let response = try await client.execute(request, timeout: .seconds(5))
                statuses.append(response.status.code)
                _ = try await response.body.collect(upTo: 1 << 16)
            } catch {
                Issue.record(error)
            }
        }
        try await client.shutdown()
        #expect(statuses == [400, 400, 400, 400, 200])
    }
}
