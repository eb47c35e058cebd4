import AsyncHTTPClient
import Foundation
import KeyCustody
import NIOSSL
import PKCS11
import PaywardenTestTraits
import PaywardenTesting
import Testing

@testable import OutboundTLS

@Suite(.serialized, .releasesTestResources)
struct MutualTLSTests {
    let merchant = GatewayFixture.merchantID

    /// TLS 1.2: the HSM-held RSA identity key signs the handshake (RSA PKCS#1 v1.5), the
    /// stand-in sees the identity certificate, and Apple's headers are on the request.
    @Test func tls12HandshakeIsSignedByTheHSM() async throws {
        let fixture = try await GatewayFixture.make(maximumTLSVersion: .tlsv12)
        let identity = try await fixture.addIdentity()
        fixture.standIn.setEvent("evt-1", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: "MT-1"))
        let details = try await fixture.withClient { try await $0.merchantTokenEvent(merchantID: merchant, eventID: "evt-1") }
        #expect(details.kind == .unlink)
        #expect(details.merchantTokenIdentifier == "MT-1")
        let request = try #require(fixture.standIn.requests.first)
        #expect(request.tlsVersion == "TLSv1.2")
        #expect(request.clientCertificateDER == identity.certificate?.der)
        #expect(request.clientCertificateSubject?.contains(merchant) == true)
        #expect(request.method == "GET")
        #expect(request.path == "/paymentservices/v1/merchantId/\(merchant)/merchantToken/event/evt-1")
        #expect(UUID(uuidString: request.header("x-request-id") ?? "") != nil)
        #expect(request.header("content-type") == "application/json")
        #expect(request.header("accept") == "application/json")
    }

    /// TLS 1.3 needs RSA-PSS from the HSM; without it the client stays at TLS 1.2 and says so.
    @Test func tls13WhenTheHSMSignsRSAPSS() async throws {
        let fixture = try await GatewayFixture.make(maximumTLSVersion: .tlsv13)
        try await fixture.addIdentity()
        fixture.standIn.setEvent("evt-13", merchantID: merchant, .event(type: "UPDATED_CARD_ART", merchantTokenID: "MT-13"))
        let (details, versions) = try await fixture.withClient { client in
            (try await client.merchantTokenEvent(merchantID: merchant, eventID: "evt-13"), client.tlsVersions)
        }
        #expect(details.kind == .updatedCardArt)
        let request = try #require(fixture.standIn.requests.first)
        if fixture.hsm.capabilities.rsaPSS {
            #expect(versions == "TLS 1.2 and 1.3")
            #expect(request.tlsVersion == "TLSv1.3")
        } else {
            print("NOTE: this HSM offers no CKM_SHA256_RSA_PKCS_PSS, so TLS 1.3 is not tried: the client negotiated TLS 1.2")
            #expect(versions == "TLS 1.2")
            #expect(request.tlsVersion == "TLSv1.2")
        }
    }

    /// A certificate whose key is not the one the HSM signs with: the stand-in refuses the
    /// handshake, no request reaches it, and the caller sees a retryable upstream failure.
    @Test(arguments: [TLSVersion.tlsv12, .tlsv13])
    func aCertificateForAnotherKeyFailsTheHandshake(maximum: TLSVersion) async throws {
        let fixture = try await GatewayFixture.make(maximumTLSVersion: maximum)
        let first = try await fixture.addIdentity(notBefore: Date().addingTimeInterval(-7200))
        let second = try await fixture.addIdentity()
        let mismatched = IdentityCredential(merchantID: merchant, keyID: second.id, certificate: try #require(first.certificate))
        fixture.standIn.setEvent("evt-x", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: "MT-x"))
        let error = try await fixture.withClient { client in
            await gatewayError { _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: "evt-x", credential: mismatched) }
        }
        #expect(error?.code == .upstreamUnavailable)
        #expect(error?.isRetryable == true)
        #expect(fixture.standIn.requests.isEmpty)
    }

    /// The HSM cannot sign the handshake (the key is gone): hsm_unavailable, not an Apple outage.
    @Test func aHandshakeTheHSMCannotSignIsHSMUnavailable() async throws {
        let fixture = try await GatewayFixture.make()
        let identity = try await fixture.addIdentity()
        let missing = IdentityCredential(merchantID: merchant, keyID: .random(), certificate: try #require(identity.certificate))
        let error = try await fixture.withClient { client in
            await gatewayError { _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: "evt-1", credential: missing) }
        }
        #expect(error?.code == .hsmUnavailable)
        #expect(error?.isRetryable == true)
        #expect(fixture.standIn.requests.isEmpty)
    }

    /// The stand-in, like Apple, accepts only client certificates from its CA, and none at all
    /// is refused too.
    @Test func aClientCertificateFromAnotherCAIsRefused() async throws {
        let fixture = try await GatewayFixture.make(standInCA: try TestCertificateAuthority(commonName: "Some Other CA"))
        try await fixture.addIdentity()
        let error = try await fixture.withClient { client in
            await gatewayError { _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: "evt-1") }
        }
        #expect(error?.code == .upstreamUnavailable)

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates([fixture.standIn.serverCA])]
        let anonymous = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(tlsConfiguration: tls))
        var request = HTTPClientRequest(url: fixture.standIn.baseURL.absoluteString + "/paymentservices/paymentSession")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "x-request-id", value: UUID().uuidString)
        await #expect(throws: (any Error).self) { _ = try await anonymous.execute(request, timeout: .seconds(5)) }
        try await anonymous.shutdown()
        #expect(fixture.standIn.requests.isEmpty)
    }

    @Test func noIdentityCertificateIsIdentityUnavailable() async throws {
        let fixture = try await GatewayFixture.make()
        let none = try await fixture.withClient { client in
            await gatewayError { _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: "evt-1") }
        }
        #expect(none?.code == .identityUnavailable)
        #expect(none?.isRetryable == true)
        #expect(none?.message.contains("paywarden keys create --merchant-id \(merchant) --purpose identity") == true)

        // A processing key does not count, nor does an identity key still waiting for its certificate.
        let (_, csr) = try await fixture.keys.create(merchantID: merchant, purpose: .processing, algorithm: .ec)
        _ = try await fixture.keys.importCertificate(
            try MerchantCertificate(bytes: try fixture.ca.issue(csrPEM: csr, merchantID: merchant, purpose: .processing)))
        let pending = try await fixture.addIdentity(importCertificate: false)
        let waiting = try await fixture.withClient { client in
            await gatewayError { _ = try await client.identityCredential(for: merchant) }
        }
        #expect(waiting?.code == .identityUnavailable)
        #expect(waiting?.message.contains("\(pending.id) is waiting for its certificate") == true)
        #expect(fixture.standIn.requests.isEmpty)
    }

    /// Of two valid identity certificates the newest (latest notValidBefore) is presented.
    @Test func theNewestValidIdentityCertificateIsUsed() async throws {
        let fixture = try await GatewayFixture.make()
        let older = try await fixture.addIdentity(notBefore: Date().addingTimeInterval(-7200))
        let newer = try await fixture.addIdentity(notBefore: Date().addingTimeInterval(-600))
        _ = try await fixture.addIdentity(merchantID: "merchant.com.example.other")
        fixture.standIn.setEvent("evt-1", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: "MT-1"))
        let credential = try await fixture.withClient { client in
            _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: "evt-1")
            return try await client.identityCredential(for: merchant)
        }
        #expect(credential.keyID == newer.id)
        let presented = try #require(fixture.standIn.requests.first?.clientCertificateDER)
        #expect(presented == newer.certificate?.der)
        #expect(presented != older.certificate?.der)
    }

    /// A rotation: the running client keeps its choice for the cache's lifetime (at most 30 s),
    /// and a client reading the key store again presents the new certificate.
    @Test func aRotatedIdentityCertificateIsPickedUpFromTheKeyStore() async throws {
        let fixture = try await GatewayFixture.make()
        let first = try await fixture.addIdentity(notBefore: Date().addingTimeInterval(-7200))
        fixture.standIn.setEvent("evt-1", merchantID: merchant, .event(type: "UNLINK", merchantTokenID: "MT-1"))
        try await fixture.withClient { client in
            _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: "evt-1")
            _ = try await fixture.keys.retire(first.id.hex)
            let second = try await fixture.addIdentity()
            // Within the cache lifetime the first certificate is still chosen; a fresh client sees the new one.
            _ = try await client.merchantTokenEvent(merchantID: merchant, eventID: "evt-1")
            try await fixture.withClient { fresh in
                _ = try await fresh.merchantTokenEvent(merchantID: merchant, eventID: "evt-1")
            }
            let presented = fixture.standIn.requests.map(\.clientCertificateDER)
            #expect(presented == [first.certificate?.der, first.certificate?.der, second.certificate?.der])
        }
    }
}
