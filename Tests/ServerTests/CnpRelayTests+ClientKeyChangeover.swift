import Foundation
import PKCS11
import PaywardenTesting
import Testing

/// Upstream client keys change over without a restart: two HSM keys are configured in order of
/// preference, and the first the processor accepts is presented, as the stand-in changes which
/// certificate it trusts. The key presented is recorded for `keys list`.
extension CnpRelayTests {
    /// The settings prefer the new key before the processor trusts it: the old one is presented.
    /// Once the processor trusts only the new certificate, the periodic check finds it accepted,
    /// and requests go with the new key, with no failed request and no restart.
    @Test func aPreferredKeyIsPresentedOnceTheProcessorTrustsIt() async throws {
        try await withFixture(clientCertificate: .changingOver(newFirst: true)) { fixture in
            let changeover = try #require(fixture.changeover)
            try await expectApproved(fixture, presenting: changeover.oldCertificate)
            #expect(try await keyInUse(fixture) == changeover.old)

            fixture.upstream.trustOnlyClientCertificates([changeover.newCertificate])
            try await waitUntil { try await keyInUse(fixture) == changeover.new }
            try await expectApproved(fixture, presenting: changeover.newCertificate)
            #expect(fixture.server.logs.text.contains("the upstream client key changed over"))
            #expect(!fixture.server.logs.text.contains("upstream call failed"))
            // The checks that got through the handshake (the old key's at start, the new key's once
            // trusted) were HEAD requests, none of them a message the engine saw.
            #expect(fixture.upstream.headRequestCount >= 2)
            #expect(fixture.upstream.received.count == 2)
        }
    }

    /// The upstream is down when the server starts: the key an instance last recorded is
    /// presented (not the preferred one, which the processor may not trust yet), and the upstream
    /// is asked again until it answers.
    @Test func anUpstreamDownAtStartGetsTheKeyLastRecorded() async throws {
        try await withFixture(clientCertificate: .changingOver(newFirst: true, downAtStart: true)) { fixture in
            let changeover = try #require(fixture.changeover)
            #expect(fixture.server.logs.text.contains("could not ask the upstream whether it accepts a client key"))
            #expect(try await keyInUse(fixture) == changeover.old)
            try await fixture.upstream.restart()
            try await expectApproved(fixture, presenting: changeover.oldCertificate)
            fixture.upstream.trustOnlyClientCertificates([changeover.newCertificate])
            try await waitUntil { try await keyInUse(fixture) == changeover.new }
            try await expectApproved(fixture, presenting: changeover.newCertificate)
        }
    }

    /// The settings name the current key first: it is presented until the processor stops trusting
    /// it. The request it refuses fails as any refused handshake does (nothing reaches the engine)
    /// and starts a check; the next request goes with the new key.
    @Test func theNextKeyTakesOverWhenTheProcessorStopsTrustingTheCurrentOne() async throws {
        try await withFixture(clientCertificate: .changingOver(newFirst: false)) { fixture in
            let changeover = try #require(fixture.changeover)
            try await expectApproved(fixture, presenting: changeover.oldCertificate)
            #expect(try await keyInUse(fixture) == changeover.old)

            fixture.upstream.trustOnlyClientCertificates([changeover.newCertificate])
            let answered = fixture.upstream.received.count
            let id = try await register(fixture.server, pan: "4457119922397003")
            let refused = try await post(
                fixture.server,
                CnpTestMessages.envelope(.cnp, password: fixture.server.vaultKey, CnpTestMessages.paypage(registrationID: id)))
            #expect([502, 503].contains(refused.status) && refused.text.contains(#"response="2""#), "\(refused.text)")
            #expect(fixture.upstream.received.count == answered)
            try await waitUntil { try await keyInUse(fixture) == changeover.new }
            try await expectApproved(fixture, presenting: changeover.newCertificate)
        }
    }

    /// A paypage authorization is approved, and the upstream saw `certificate` on its connection.
    private func expectApproved(
        _ fixture: RelayFixture, presenting certificate: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let id = try await register(fixture.server, pan: "4457119922397003")
        let reply = try await post(
            fixture.server, CnpTestMessages.envelope(.cnp, password: fixture.server.vaultKey, CnpTestMessages.paypage(registrationID: id)))
        #expect(reply.status == 200 && element("response", in: reply.text) == "000", "\(reply.text)", sourceLocation: sourceLocation)
        #expect(fixture.upstream.clientCertificates.last == certificate, sourceLocation: sourceLocation)
    }

    /// The key the database says the cnpAPI upstream is presented (what `keys list` shows).
    private func keyInUse(_ fixture: RelayFixture) async throws -> KeyIdentifier? {
        let records = try await fixture.server.server.database.keyRecords.upstreamClientKeys()
        return records.first { $0.upstream == "cnpapi" }.flatMap { KeyIdentifier(hex: $0.keyID) }
    }

    /// Waits up to 10 s for `condition`.
    private func waitUntil(_ condition: () async throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("not within 10 s", sourceLocation: sourceLocation)
    }
}
