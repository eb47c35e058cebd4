import Foundation
import KeyCustody
import NIOSSL
import PKCS11
import PaywardenServer
import PaywardenTesting
import ProcessorRelays
import Testing
import X509

/// The upstream's mutual TLS with the client key in the HSM (purpose upstream): the handshake is
/// signed there, the certificate is the one the processor issued and `keys import-certificate`
/// stored, and a key the start cannot use refuses the start naming the setting.
extension CnpRelayTests {
    @Test func anHSMClientKeySignsTheHandshakeToAnUpstreamThatRequiresOne() async throws {
        try await withFixture(clientCertificate: .inHSM) { fixture in
            let id = try await register(fixture.server, pan: "4457119922397003")
            let reply = try await post(
                fixture.server,
                CnpTestMessages.envelope(.cnp, password: fixture.server.vaultKey, CnpTestMessages.paypage(registrationID: id)))
            #expect(reply.status == 200 && element("response", in: reply.text) == "000", "\(reply.text)")
            #expect(fixture.upstream.received.count == 1)
            try fixture.expectTheHSMKeysCertificateWasPresented()
        }
    }

    @Test func aPEMClientKeyStillWorksAndTheStartWarnsAboutIt() async throws {
        try await withFixture(clientCertificate: .presented) { fixture in
            #expect(fixture.server.logs.text.contains("TLS client key is a PEM file"))
            #expect(fixture.server.logs.text.contains("PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_KEY"))
        }
    }

    @Test func anHSMKeyWhoseCertificateTheUpstreamDoesNotTrustGetsTheTypedUpstreamFailure() async throws {
        try await withFixture(clientCertificate: .inHSMFromAnotherCA) { fixture in
            let id = try await register(fixture.server, pan: "4457119922397003")
            let reply = try await post(
                fixture.server,
                CnpTestMessages.envelope(.cnp, password: fixture.server.vaultKey, CnpTestMessages.paypage(registrationID: id)))
            #expect([502, 503].contains(reply.status) && reply.text.contains(#"response="2""#), "\(reply.text)")
            #expect(fixture.upstream.received.isEmpty)
        }
    }

    /// A key id that is not in the HSM, an Apple Pay key, and a certificate file of another key:
    /// each refuses the start, naming the setting.
    @Test func anUnusableHSMClientKeyRefusesTheStart() async throws {
        let upstream = try await ProcessorUpstreamStandIn.start(tls: true, requireClientCertificate: true)
        defer { Task { try? await upstream.stop() } }
        let directory = NSTemporaryDirectory() + "paywarden-upkey-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TestResources.track(directory: directory)
        let otherCertificate = try upstream.writeClientIdentity(to: directory).certificate
        let base = UpstreamConfiguration(format: .cnpAPI, baseURL: upstream.baseURL, timeout: .seconds(2))
        let setting = "PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_KEY"

        func expectRefusal(
            _ naming: [String], sourceLocation: SourceLocation = #_sourceLocation,
            _ keyFor: @escaping @Sendable (MerchantKeyStore) async throws -> ([KeyIdentifier], [NIOSSLCertificate])
        ) async {
            let error = await #expect(throws: TestServerStartError.self, sourceLocation: sourceLocation) {
                try await withServer { configuration in
                    configuration.relay = RelayConfiguration(cnp: base, cnpMerchantIDs: ["example": ["01234"]])
                } configuringWithKeys: { store in
                    let (keyIDs, chain) = try await keyFor(store)
                    return { configuration in
                        configuration.relay.cnp?.clientKeysInHSM = keyIDs
                        configuration.relay.cnp?.clientCertificateChain = chain
                    }
                } _: { _ in
                }
            }
            for name in naming { #expect(error?.reason.contains(name) == true, "\(error?.reason ?? "")", sourceLocation: sourceLocation) }
        }

        await expectRefusal([setting, "not a Paywarden key in the HSM"]) { _ in ([KeyIdentifier.random()], []) }
        await expectRefusal([setting, "a processing key"]) { store in
            ([try #require(try await store.list().first { $0.purpose == .processing }).id], [])
        }
        await expectRefusal([setting, "has no certificate"]) { store in
            ([try await store.create(merchantID: "relay.upstream", purpose: .upstream, algorithm: .rsa).key.id], [])
        }
        await expectRefusal(["PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_CERTIFICATE", "another key's"]) { store in
            let keyID = try await RelayFixture.upstreamKey(in: store, certifiedBy: upstream)
            return ([keyID], try NIOSSLCertificate.fromPEMFile(otherCertificate))
        }
        // Of two keys, the certificate file must be one of theirs.
        await expectRefusal(["PAYWARDEN_RELAY_CNP_UPSTREAM_CLIENT_CERTIFICATE", "none of the keys", setting]) { store in
            let first = try await RelayFixture.upstreamKey(in: store, certifiedBy: upstream)
            let second = try await RelayFixture.upstreamKey(in: store, certifiedBy: upstream)
            return ([first, second], try NIOSSLCertificate.fromPEMFile(otherCertificate))
        }
    }
}
