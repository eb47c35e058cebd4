import Foundation
import PKCS11
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// A module without ECDH (as p11-kit's 0.24 client or Google's kmsp11): the fault-injecting module
/// answers `CKR_MECHANISM_INVALID` to every `C_DeriveKey`, so the capability probe finds no ECDH
/// path. EC_v1 is refused for good (501 `hsm_capability_missing`, no Retry-After, the missing
/// mechanism and the remedy named), the service stays ready and says what it cannot decrypt, and
/// RSA_v1 decrypts.
@Suite(.serialized, .releasesTestResources)
struct HSMCapabilityGapTests {
    @Test func aTokenVersionTheHSMCannotDecryptIsRefusedForGoodWhileTheServiceStaysReady() async throws {
        let device = try FaultInjectingPKCS11.make()
        try device.fail("C_DeriveKey", with: .mechanismInvalid)
        try await withServer({ $0.hsm.modulePath = device.modulePath }) { server in
            #expect(try await server.waitForReadiness(200))
            #expect(server.server.hsm.capabilities.ecdhPath == nil)
            let ready = try await server.operations("/readyz")
            #expect(ready.status == 200 && ready.text.contains(#""cannotDecrypt":["EC_v1"]"#), "\(ready.text)")

            let token = try server.ecToken()
            let refused = try await server.send(body: token)
            #expect(refused.status == 501, "\(refused.text)")
            #expect(refused.errorCode == "hsm_capability_missing")
            #expect(refused.header("Retry-After") == nil)
            _ = DecryptEndpointTests.observed.withLock { $0.insert("501 hsm_capability_missing") }
            #expect(refused.text.contains("cannot decrypt EC_v1 tokens") && refused.text.contains("CKM_ECDH1_DERIVE"), "\(refused.text)")
            #expect(refused.text.contains("no retry helps") && refused.text.contains("PAYWARDEN_HSM_ALLOW_EXTRACTABLE_ECDH"))
            // Refused before its transaction id was claimed: the same token again is the same answer, not a replay.
            #expect(try await server.send(body: token).errorCode == "hsm_capability_missing")
            #expect(try device.calls("C_DeriveKey") > 0)

            #expect(try await server.operations("/readyz").status == 200, "a capability gap is not an outage")
            #expect(try await server.send(body: try server.rsaToken()).status == 200)
            let metrics = String(decoding: try await server.operations("/metrics").body, as: UTF8.self)
            #expect(metrics.contains(#"paywarden_hsm_token_version_decryptable{version="EC_v1"} 0"#), "\(metrics)")
            #expect(metrics.contains(#"paywarden_hsm_token_version_decryptable{version="RSA_v1"} 1"#))
            #expect(metrics.contains(#"outcome="hsm_capability_missing""#))
            #expect(server.logs.text.contains("this HSM cannot decrypt EC_v1 tokens"))
        }
    }
}
