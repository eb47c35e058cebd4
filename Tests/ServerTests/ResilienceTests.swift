import AsyncHTTPClient
import Crypto
import Foundation
import NIOHTTP1
import NIOSSL
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import SwiftASN1
import Testing
import X509

@Suite(.serialized, .releasesTestResources)
struct ResilienceTests {
    @Test func readinessFollowsTheHSMAndDecryptsAnswerUnavailableMeanwhile() async throws {
        try await withServer { server in
            #expect(try await server.waitForReadiness(200))
            let store = try #require(server.token.storeDirectory())
            // Outside the token directory: SoftHSM would find the token again in any folder there.
            let hidden = server.token.directory + "/away-" + UUID().uuidString
            try FileManager.default.moveItem(atPath: store, toPath: hidden)
            #expect(try await server.waitForReadiness(503), "readiness must fall while the token is gone")
            let refused = try await server.send(body: try server.ecToken())
            #expect(refused.status == 503)
            #expect(refused.errorCode == "hsm_unavailable")
            #expect(refused.header("Retry-After") == "1")
            _ = DecryptEndpointTests.observed.withLock { $0.insert("503 hsm_unavailable") }

            try FileManager.default.moveItem(atPath: hidden, toPath: store)
            #expect(try await server.waitForReadiness(200), "readiness must come back with the token")
            #expect(try await server.send(body: try server.ecToken()).status == 200)
        }
    }

    @Test func moduleIsRecycledEveryNDecryptionsWithoutFailingRequests() async throws {
        try await withServer({ $0.recycleEvery = 20 }) { server in
            let replies = try await withThrowingTaskGroup(of: [TestServer.Reply].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var replies: [TestServer.Reply] = []
                        for _ in 0..<30 { replies.append(try await server.send(body: try server.ecToken())) }
                        return replies
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(
                replies.allSatisfy { $0.status == 200 },
                "\(replies.filter { $0.status != 200 }.map { String(decoding: $0.body, as: UTF8.self) })")
            // The recycles queued during the burst run one after another after it: wait for them,
            // however slow the machine.
            let deadline = ContinuousClock.now + .seconds(15)
            while server.server.hsm.recycles < 5, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(server.server.hsm.recycles >= 5, "120 decryptions, a recycle every 20")
            let metrics = String(decoding: try await server.operations("/metrics").body, as: UTF8.self)
            #expect(metrics.contains("paywarden_hsm_module_recycles_total"))
        }
    }

    @Test func tlsServesModernClientsAndRefusesOldProtocols() async throws {
        let directory = NSTemporaryDirectory() + "paywarden-tls-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("127.0.0.1") }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: Date().addingTimeInterval(-60),
            notValidAfter: Date().addingTimeInterval(3600), issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
            },
            issuerPrivateKey: .init(key))
        try certificate.serializeAsPEM().pemString.write(toFile: directory + "/cert.pem", atomically: true, encoding: .utf8)
        try OwnerOnlyFile.write(key.pemRepresentation, to: directory + "/key.pem")

        try await withServer({
            $0.tls = .init(certificatePath: directory + "/cert.pem", privateKeyPath: directory + "/key.pem")
        }) { server in
            #expect(try await server.send(body: try server.ecToken()).status == 200)
            for version in [TLSVersion.tlsv1, .tlsv11] {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.certificateVerification = .none
                tls.minimumTLSVersion = version
                tls.maximumTLSVersion = version
                let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
                await #expect(throws: (any Error).self, "\(version) must be refused") {
                    _ = try await client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(server.port)/healthz"), timeout: .seconds(5))
                }
                try await client.shutdown()
            }
            var modern = TLSConfiguration.makeClientConfiguration()
            modern.certificateVerification = .none
            modern.maximumTLSVersion = .tlsv12
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: modern))
            let reply = try await client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(server.port)/healthz"), timeout: .seconds(5))
            #expect(reply.status.code == 200)
            try await client.shutdown()
        }
    }
}

extension ResilienceTests {
    /// With a client CA and the certificate required, only clients holding a certificate that
    /// CA issued complete the handshake. With the certificate optional, a client without one is
    /// let in (its API key still decides), but a certificate from anyone else is refused.
    @Test(arguments: [true, false])
    func mutualTLSAcceptsOnlyCertificatesFromTheConfiguredCA(required: Bool) async throws {
        let directory = NSTemporaryDirectory() + "paywarden-mtls-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func write(_ certificate: Certificate, _ key: P256.Signing.PrivateKey, _ name: String) throws {
            try certificate.serializeAsPEM().pemString.write(toFile: "\(directory)/\(name).pem", atomically: true, encoding: .utf8)
            try OwnerOnlyFile.write(key.pemRepresentation, to: "\(directory)/\(name)-key.pem")
        }
        func certificate(_ subject: String, key: P256.Signing.PrivateKey, issuer: String, issuerKey: P256.Signing.PrivateKey, ca: Bool)
            throws -> Certificate
        {
            try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: Date().addingTimeInterval(-60),
                notValidAfter: Date().addingTimeInterval(3600), issuer: try DistinguishedName { CommonName(issuer) },
                subject: try DistinguishedName { CommonName(subject) }, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(ca ? BasicConstraints.isCertificateAuthority(maxPathLength: nil) : BasicConstraints.notCertificateAuthority)
                    if !ca { SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))]) }
                },
                issuerPrivateKey: .init(issuerKey))
        }
        let caKey = P256.Signing.PrivateKey()
        try write(try certificate("Client CA", key: caKey, issuer: "Client CA", issuerKey: caKey, ca: true), caKey, "client-ca")
        let serverKey = P256.Signing.PrivateKey()
        try write(try certificate("127.0.0.1", key: serverKey, issuer: "127.0.0.1", issuerKey: serverKey, ca: false), serverKey, "server")
        let clientKey = P256.Signing.PrivateKey()
        let clientCertificate = try certificate("payments-client", key: clientKey, issuer: "Client CA", issuerKey: caKey, ca: false)
        let strangerKey = P256.Signing.PrivateKey()
        let stranger = try certificate("stranger", key: strangerKey, issuer: "stranger", issuerKey: strangerKey, ca: false)

        try await withServer({
            $0.tls = .init(
                certificatePath: directory + "/server.pem", privateKeyPath: directory + "/server-key.pem",
                clientCAPath: directory + "/client-ca.pem", requireClientCertificate: required)
        }) { server in
            func client(_ identity: (Certificate, P256.Signing.PrivateKey)?) throws -> HTTPClient {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.certificateVerification = .none
                if let (certificate, key) = identity {
                    tls.certificateChain = [
                        .certificate(try NIOSSLCertificate(bytes: Array(certificate.serializeAsPEM().pemString.utf8), format: .pem))
                    ]
                    tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem))
                }
                return HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            }
            let url = "https://127.0.0.1:\(server.port)/healthz"
            let foreign = try client((stranger, strangerKey))
            await #expect(throws: (any Error).self, "a certificate from another CA") {
                _ = try await foreign.execute(HTTPClientRequest(url: url), timeout: .seconds(5))
            }
            try await foreign.shutdown()

            let anonymous = try client(nil)
            if required {
                await #expect(throws: (any Error).self, "no certificate") {
                    _ = try await anonymous.execute(HTTPClientRequest(url: url), timeout: .seconds(5))
                }
            } else {
                #expect(try await anonymous.execute(HTTPClientRequest(url: url), timeout: .seconds(5)).status.code == 200)
            }
            try await anonymous.shutdown()

            let accepted = try client((clientCertificate, clientKey))
            #expect(try await accepted.execute(HTTPClientRequest(url: url), timeout: .seconds(5)).status.code == 200)
            try await accepted.shutdown()
        }
    }
}

/// Runs last (the suite's name sorts after the others in its own serialized run): every
/// status and error code documented for the decrypt endpoint was produced by these tests.
@Suite(.serialized, .releasesTestResources)
struct OpenAPIDocumentTests {
    @Test func everyDocumentedStatusAndCodeIsExercised() async throws {
        // Produce what the other suites produce, so this test stands alone.
        let endpoint = DecryptEndpointTests()
        try await endpoint.endpointBehaviourMatchesTheOpenAPIDocument()
        try await endpoint.excessLoadGetsAFastOverloadedWithRetryAfter()
        try await ResilienceTests().readinessFollowsTheHSMAndDecryptsAnswerUnavailableMeanwhile()
        try await ReplayLedgerTests().postgresOutage()
        try await HSMCapabilityGapTests().aTokenVersionTheHSMCannotDecryptIsRefusedForGoodWhileTheServiceStaysReady()

        // Each error response of the operation lists its codes (OpenAPIVaultTests.swift reads them).
        let document = try OpenAPIDocument.load()
        let documented = document.documentedPairs("POST /v1/payment-tokens/decrypt")
        let statuses = Set(documented.map { String($0.split(separator: " ")[0]) })
        let codes = Set(documented.compactMap { $0.split(separator: " ").dropFirst().first.map(String.init) })

        let observed = DecryptEndpointTests.observed.withLock { $0 }
        let observedStatuses = Set(observed.map { String($0.split(separator: " ")[0]) })
        let observedCodes = Set(observed.compactMap { $0.split(separator: " ").dropFirst().first.map(String.init) })
        #expect(statuses == observedStatuses, "documented \(statuses.sorted()) vs produced \(observedStatuses.sorted())")
        #expect(codes == observedCodes, "documented \(codes.sorted()) vs produced \(observedCodes.sorted())")
        #expect(documented == observed, "documented \(documented.sorted()) vs produced \(observed.sorted())")
        // And the server produces no code the document does not list as stable.
        #expect(observedCodes.isSubset(of: document.stableCodes))
    }
}
