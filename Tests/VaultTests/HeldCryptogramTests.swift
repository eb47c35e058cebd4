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

/// One card always gets the same token, so a second `decryptblob` replaces the held row: a take
/// that read the row before must end that row only, never the newer payload it did not open.
extension VaultTests {
    @Test func aTakeHeldBetweenItsReadAndItsEndNeitherRelaysTwiceNorWipesANewerCryptogram() async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withEnvironment(device: device) { environment in
            let vault = environment.vault
            let first = PaymentPayloads.threeDSecure(pan: "4111111111111111", cryptogram: "AgAAAAAABk4DWZ4C28yUQAAAAAA=")
            let second = PaymentPayloads.threeDSecure(pan: "4111111111111111", cryptogram: "AgAAAAAAAIR8CQrXcIhbQAAAAAA=")
            let policy = try #require(OrganizationPolicy(paypage: try await environment.paypage("paypageA")))
            let issued = try await vault.issueToken(for: try AccountFacts(paymentData: first), policy: policy)
            #expect(try await vault.issueToken(for: try AccountFacts(paymentData: second), policy: policy).token == issued.token)
            _ = try await vault.holdCryptogram(of: Environment.decrypted(first), for: issued, organization: "alpha")

            // The next data-key unwrap (C_UnwrapKey or C_Decrypt, as the token's probe chose) waits:
            // the late take has read the row holding the first payload and is opening it.
            for function in ["C_UnwrapKey", "C_Decrypt"] { try device.hang(function, times: 1) }
            let late = Task { try await vault.takeHeldCryptogram(for: issued.token, organization: "alpha") }
            try await device.waitUntilHung("*")

            // Meanwhile another take ends the row and relays the first payload, and a new
            // decryptblob for the same card holds the second.
            #expect(try await vault.takeHeldCryptogram(for: issued.token, organization: "alpha") == first)
            _ = try await vault.holdCryptogram(of: Environment.decrypted(second), for: issued, organization: "alpha")

            try device.release()
            let lateTake = try await late.value
            #expect(lateTake == nil, "the late take relayed a payload: the first again, or the second it never opened")
            #expect(
                try await vault.takeHeldCryptogram(for: issued.token, organization: "alpha") == second,
                "the newer cryptogram was ended by a take that read the older one")
        }
    }
}
