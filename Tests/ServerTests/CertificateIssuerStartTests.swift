import Foundation
import KeyCustody
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// `serve` says at start when merchant certificates are checked against issuers other than
/// Apple's pinned ones, and is silent about it otherwise.
@Suite(.serialized, .releasesTestResources)
struct CertificateIssuerStartTests {
    @Test func replacedIssuersAreAWarningAtStart() async throws {
        let warning = "not Apple's pinned WWDR CAs: for tests and sandboxes only; unset PAYWARDEN_CERTIFICATE_ISSUERS in production"
        try await withServer { server in
            #expect(server.server.configuration.certificateIssuers.arePinned)
            #expect(!server.logs.text.contains(warning))
        }
        try await withServer({ $0.certificateIssuers = TestCertificateAuthority.shared.issuers }) { server in
            #expect(server.logs.text.contains("merchant certificates are checked against the test CA"))
            #expect(server.logs.text.contains(warning))
        }
    }
}
