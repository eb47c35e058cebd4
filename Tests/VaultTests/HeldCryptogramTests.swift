import Foundation
import PKCS11
import PaywardenTesting
import Testing
import Vault

/// The payload `decryptblob` holds for a token's first authorization: an HSM that cannot open it
/// when it is asked for leaves it held, so the retry the client is told to make still finds it.
extension VaultTests {
    @Test func aHeldPayloadTheHSMCannotOpenNowIsStillHeldForTheRetry() async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withEnvironment(device: device) { environment in
            let vault = environment.vault
            let payload = PaymentPayloads.threeDSecure(pan: "4111111111111111")
            let policy = try #require(OrganizationPolicy(paypage: try await environment.paypage("paypageA")))
            let issued = try await vault.issueToken(for: try AccountFacts(paymentData: payload), policy: policy)
            _ = try await vault.holdCryptogram(of: Environment.decrypted(payload), for: issued, organization: "alpha")

            // The data key unwraps by C_UnwrapKey or C_Decrypt, as the token's probe chose: both fail.
            for function in ["C_UnwrapKey", "C_Decrypt"] { try device.fail(function, with: .functionFailed) }
            await expectVaultError(.hsmUnavailable, "a take while the HSM cannot open the payload") {
                _ = try await vault.takeHeldCryptogram(for: issued.token, organization: "alpha")
            }
            for function in ["C_UnwrapKey", "C_Decrypt"] { try device.stopFailing(function) }

            #expect(try await vault.takeHeldCryptogram(for: issued.token, organization: "alpha") == payload)
            #expect(try await vault.takeHeldCryptogram(for: issued.token, organization: "alpha") == nil, "taken twice")
        }
    }
}
