import ApplePay
import Crypto
import Foundation
import KeyCustody
import OutboundTLS
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// Retrieve Merchant Token Public Key and Usage Data Availability Notification against the
/// stand-in, which holds each token's "device" key and checks what a device would (U1–U11).
@Suite(.serialized, .releasesTestResources)
struct UsageInformationCallTests {
    let merchant = GatewayFixture.merchantID
    let token = "DNITHE000000000000000042"

    @Test func theDeviceKeyComesBackAndTheSealedMetadataOpensOnTheDevice() async throws {
        let fixture = try await GatewayFixture.make()
        let identity = try await fixture.addIdentity()
        let device = fixture.standIn.setUsageInformationDevice(merchantTokenID: token)
        let keys = SenderKeys(hsm: fixture.hsm)
        let sender = try await keys.create(label: "usage-information \(merchant)")
        #expect(sender.custody == .inHSM)
        let metadata = Array(#"{"authenticationToken":"opaque-42","webServiceURL":"https://pay.example.com"}"#.utf8)

        try await fixture.withClient { client in
            let answer = try await client.merchantTokenPublicKey(merchantID: merchant, merchantTokenID: token)
            guard case .key(let publicKey, let suite) = answer else {
                Issue.record("no key: \(answer)")
                return
            }
            #expect(publicKey == Array(device.publicKey.x963Representation))
            #expect(suite == "HPKE_AUTH_P384_SHA384_AES_GCM_256")
            let envelope = try await UsageInformationEnvelope.seal(
                metadata, merchantTokenIdentifier: token, merchantTokenPublicKey: publicKey, senderKey: try await keys.open(sender))
            #expect(envelope.limitViolation == nil)
            try await client.notifyUsageDataAvailable(
                merchantID: merchant, merchantTokenID: token, metadata: envelope.notificationMetadata)
        }
        let notification = try #require(fixture.standIn.usageNotifications.first)
        #expect(notification.merchantTokenID == token)
        #expect(notification.webServiceURL == "https://pay.example.com")
        #expect(notification.authenticationToken == "opaque-42")
        #expect(notification.merchantPublicKey == sender.publicKey)

        let requests = fixture.standIn.requests
        #expect(requests.map(\.path) == ["publicKey", "notify"].map { "/paymentservices/v1/merchantId/\(merchant)/merchantToken/\($0)" })
        #expect(String(decoding: requests[0].body, as: UTF8.self) == #"{"merchantTokenIdentifier":"\#(token)"}"#)
        for request in requests {
            #expect(request.clientCertificateDER == identity.certificate?.der, "mutual TLS with the merchant's identity key")
            #expect(request.header("content-type") == "application/json")
            #expect(UUID(uuidString: request.header("x-request-id") ?? "") != nil)
        }
    }

    @Test func twoHundredTwoMeansWaitAndFourHundredNineSaysWhatToFix() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        fixture.standIn.setUsageInformationDevice(merchantTokenID: token, answer: .notYetAvailable)
        try await fixture.withClient { client in
            let waiting = try await client.merchantTokenPublicKey(merchantID: merchant, merchantTokenID: token)
            #expect(waiting == .notYetAvailable)
            fixture.standIn.setUsageInformationDevice(merchantTokenID: token, answer: .status(409))
            let conflict = await gatewayError { _ = try await client.merchantTokenPublicKey(merchantID: merchant, merchantTokenID: token) }
            #expect(conflict?.code == .appleRefused)
            #expect(conflict?.appleStatus == 409)
            #expect(conflict?.message.contains("tokenNotificationURL") == true)
            for status in [400, 403, 404] {
                fixture.standIn.clearRequests()
                fixture.standIn.setUsageInformationDevice(merchantTokenID: token, answer: .status(status))
                let error = await gatewayError { _ = try await client.merchantTokenPublicKey(merchantID: merchant, merchantTokenID: token) }
                #expect(error?.code == .appleRefused)
                #expect(error?.appleStatus == status)
                #expect(fixture.standIn.requests.count == 1, "HTTP \(status) is final")
            }
        }
    }

    @Test func fiveHundredIsRetriedABoundedNumberOfTimes() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        fixture.standIn.setUsageInformationDevice(merchantTokenID: token)
        try await fixture.withClient { client in
            fixture.standIn.failNext(2, status: 500)
            guard case .key = try await client.merchantTokenPublicKey(merchantID: merchant, merchantTokenID: token) else {
                Issue.record("no key after two failures")
                return
            }
            #expect(fixture.standIn.requests.count == 3)
            fixture.standIn.clearRequests()
            fixture.standIn.failNext(5, status: 500)
            let error = await gatewayError { _ = try await client.merchantTokenPublicKey(merchantID: merchant, merchantTokenID: token) }
            #expect(error?.code == .upstreamUnavailable)
            #expect(fixture.standIn.requests.count == 3, "three attempts, then the error")
            fixture.standIn.failNext(0)
        }
    }

    @Test func aKeyOrSuiteThatCannotBeUsedIsRefused() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        var offCurve = Array(P384.KeyAgreement.PrivateKey().publicKey.x963Representation)
        offCurve[96] ^= 1
        let answers: [StandInPublicKeyAnswer] = [
            .ciphersuite("HPKE_AUTH_P256_SHA256_AES_GCM_128"), .rawKey(offCurve), .rawKey(Array(offCurve.prefix(65))),
        ]
        try await fixture.withClient { client in
            for answer in answers {
                fixture.standIn.setUsageInformationDevice(merchantTokenID: token, answer: answer)
                let error = await gatewayError { _ = try await client.merchantTokenPublicKey(merchantID: merchant, merchantTokenID: token) }
                #expect(error?.code == .responseInvalid, "\(answer)")
            }
        }
    }

    @Test func badMetadataAndIdentifiersAreRefusedBeforeAnyCall() async throws {
        let fixture = try await GatewayFixture.make()
        try await fixture.addIdentity()
        try await fixture.withClient { client in
            let long = String(repeating: "M", count: 65)
            let error = await gatewayError { _ = try await client.merchantTokenPublicKey(merchantID: merchant, merchantTokenID: long) }
            #expect(error?.code == .invalidRequest)
            let six = [
                "ciphersuite": "HPKE_AUTH_P384_SHA384_AES_GCM_256", "data": String(repeating: "A", count: 4001), "ephemeralPublicKey": "e",
                "infoHash": "i", "merchantPublicKey": "m", "merchantTokenPublicKeyHash": "h",
            ]
            let tooLong = await gatewayError {
                try await client.notifyUsageDataAvailable(merchantID: merchant, merchantTokenID: token, metadata: six)
            }
            #expect(tooLong?.code == .invalidRequest)
            var five = six
            five["data"] = "AAAA"
            five["infoHash"] = nil
            let missing = await gatewayError {
                try await client.notifyUsageDataAvailable(merchantID: merchant, merchantTokenID: token, metadata: five)
            }
            #expect(missing?.code == .invalidRequest)
        }
        #expect(fixture.standIn.requests.isEmpty)
    }
}
