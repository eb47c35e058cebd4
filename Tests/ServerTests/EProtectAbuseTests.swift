import ApplePay
import Foundation
import PaywardenServer
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The anonymous registration endpoint against its abusers: one client cannot spend another's
/// address bucket (behind a proxy), forged forms cannot spend a merchant's paypage bucket, and an
/// anonymous caller learns the outcome's code and a fixed sentence, never the server's paths.
@Suite(.serialized, .releasesTestResources)
struct EProtectAbuseTests {
    static func post(_ server: TestServer, _ form: [UInt8], from client: String? = nil) async throws -> TestServer.Reply {
        try await server.send(
            .POST, "/eProtect/paypage", body: form, apiKey: .some(nil), contentType: "application/x-www-form-urlencoded",
            headers: client.map { [("X-Forwarded-For", $0)] } ?? [])
    }

    static func form(_ server: TestServer, token: [UInt8]? = nil) throws -> [UInt8] {
        try EProtectForms.form(token: try token ?? server.ecToken(), paypageID: TestServer.examplePaypage)
    }

    @Test func behindATrustedProxyEachClientHasItsOwnAddressBucket() async throws {
        try await withServer({
            $0.eProtectRatePerAddress = 1
            $0.trustedProxies = [IPAddressBlock("127.0.0.1/32")].compactMap { $0 }
        }) { server in
            var statuses: [Int] = []
            for _ in 0..<5 { statuses.append(try await Self.post(server, try Self.form(server), from: "198.51.100.7").status) }
            #expect(statuses.contains(429), "\(statuses)")
            // The next app behind the same proxy is not the flooder.
            let other = try await Self.post(server, try Self.form(server), from: "198.51.100.8")
            #expect(other.status == 200, "\(other.text)")
            // IPv4-mapped IPv6 (a dual-stack proxy's way of writing it) is the same client.
            let mapped = try await Self.post(server, try Self.form(server), from: "::ffff:198.51.100.7")
            #expect(mapped.status == 429, "\(mapped.text)")
        }
    }

    @Test func forwardedForFromAnUntrustedPeerIsNotBelieved() async throws {
        try await withServer({ $0.eProtectRatePerAddress = 1 }) { server in
            var statuses: [Int] = []
            for index in 0..<5 {
                statuses.append(try await Self.post(server, try Self.form(server), from: "198.51.100.\(index + 1)").status)
            }
            #expect(statuses.contains(429), "a client naming itself differently each time is still one client: \(statuses)")
        }
    }

    /// Junk naming a public paypage id, and a genuine token replayed, cost the sender's address
    /// bucket, not the merchant's.
    @Test func formsThatDoNotVerifyDoNotSpendThePaypagesBucket() async throws {
        try await withServer({ $0.eProtectRatePerPaypage = 1 }) { server in
            for _ in 0..<6 {
                let junk = try await Self.post(
                    server, try Self.form(server, token: try server.ecToken().flippingByte(of: "signature", at: 80)))
                #expect(junk.status == 200 && junk.text.contains(#""response":"888""#), "\(junk.text)")
            }
            // A genuine token replayed: verified, but its transaction id is not spent again, so the
            // replays do not charge the bucket (the first registration took one of its two).
            let once = try server.ecToken()
            let first = try await Self.post(server, try Self.form(server, token: once))
            #expect(first.status == 200 && first.text.contains(#""response":"870""#), "\(first.text)")
            var replays: [String] = []
            for _ in 0..<8 { replays.append(try await Self.post(server, try Self.form(server, token: once)).text) }
            #expect(replays.allSatisfy { $0.contains(#""paywardenCode":"replayed_transaction""#) }, "\(replays)")
            let genuine = try await Self.post(server, try Self.form(server))
            #expect(genuine.status == 200 && genuine.text.contains(#""response":"870""#), "\(genuine.text)")
            // Tokens that spend their transaction id are what the bucket counts (1 a second, a burst of 2).
            var statuses: [Int] = []
            for _ in 0..<4 { statuses.append(try await Self.post(server, try Self.form(server)).status) }
            #expect(statuses.contains(429), "\(statuses)")
        }
    }

    /// The verifier's words name the trust-root file; an anonymous caller gets the code and a
    /// fixed sentence, and the log keeps the detail (and warns that the roots are not Apple's).
    @Test func anonymousCallersLearnTheCodeNotTheServersInsides() async throws {
        let directory = NSTemporaryDirectory() + "paywarden-roots-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TestResources.track(directory: directory)
        let rootPath = try DecryptionTestEnvironment.sharedPKI.writeRoot(to: directory)
        try await withServer({ $0.trustAnchors = try TrustAnchors.configured([rootPath]) }) { server in
            let impostor = TokenForge(pki: try ApplePayTestPKI(name: "Impostor", rsaLeaf: false))
            guard case .ecP256(let point) = server.ecMerchant.key.publicKey else {
                Issue.record("the example merchant's key is not EC")
                return
            }
            let foreign = try impostor.ecV1(
                payload: PaymentPayloads.threeDSecure(), merchant: .init(x963Representation: point),
                merchantIdentifierHash: TokenForge.merchantIdentifierHash(server.ecMerchant.merchantID!)
            )
            .withPublicKeyHash(server.ecMerchant.publicKeyHash)
            let anonymous = try await Self.post(server, try Self.form(server, token: foreign))
            #expect(anonymous.text.contains(#""paywardenCode":"certificate_chain_invalid""#), "\(anonymous.text)")
            #expect(!anonymous.text.contains(directory) && !anonymous.text.contains("test-root"), "\(anonymous.text)")
            // An API caller is not told the path either; the operator's log has it.
            let authenticated = try await server.send(body: foreign)
            #expect(
                authenticated.errorCode == "certificate_chain_invalid" && !authenticated.text.contains(directory), "\(authenticated.text)")
            #expect(server.logs.text.contains("certificate_chain_invalid"))
            // And replacing Apple's root is warned about at start.
            #expect(server.logs.text.contains("PAYWARDEN_TRUST_ROOTS") && server.logs.text.contains("not Apple"))
        }
    }
}
