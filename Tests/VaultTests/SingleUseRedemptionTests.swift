import Foundation
import PaywardenTesting
import Testing
import Vault

/// A registration redeemed for one authorization (the relays): counted and ended in one write,
/// refused payloads left live, and of uses racing, exactly one gets the payload.
extension VaultTests {
    @Test func aSingleUseRedemptionEndsTheRegistrationInTheSameStep() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let payload = PaymentPayloads.threeDSecure(pan: "4111111111111111")
            let registration = try await vault.register(Environment.decrypted(payload), paypage: try await environment.paypage("paypageA"))
            let id = registration.id.value

            // What the caller refuses leaves the registration live and uncounted.
            await expectVaultError(.invalidRequest, "a refused payload") {
                _ = try await vault.redeemForOneUse(PresentedRegistrationID(id), organization: "alpha") { _ throws(VaultError) in
                    throw VaultError(.invalidRequest, "not this payment")
                }
            }
            // Another organisation's key neither takes nor ends it.
            await expectVaultError(.registrationNotFound, "another organisation's use") {
                _ = try await vault.redeemForOneUse(PresentedRegistrationID(id), organization: "beta") { _ throws(VaultError) in () }
            }

            let (redemption, seen) = try await vault.redeemForOneUse(PresentedRegistrationID(id), organization: "alpha") {
                payment throws(VaultError) in
                payment?.json
            }
            #expect(redemption.paymentData == payload && seen == payload)
            #expect(redemption.redemptions == 1, "the refused use was counted: \(redemption.redemptions)")
            #expect(!redemption.highValueToken.token.isEmpty && redemption.highValueToken.token != "4111111111111111")
            await expectVaultError(.registrationExpired, "a second use") {
                _ = try await vault.redeemForOneUse(PresentedRegistrationID(id), organization: "alpha") { _ throws(VaultError) in () }
            }
            await expectVaultError(.registrationExpired, "a redemption after the single use") {
                _ = try await vault.redeem(PresentedRegistrationID(id), organization: "alpha")
            }
        }
    }

    @Test func ofSingleUseRedemptionsRacingExactlyOneGetsThePayload() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let registration = try await vault.register(
                Environment.decrypted(PaymentPayloads.threeDSecure(pan: "5555555555554444")),
                paypage: try await environment.paypage("paypageA"))
            let outcomes = await withTaskGroup(of: String.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        do {
                            _ = try await vault.redeemForOneUse(PresentedRegistrationID(registration.id), organization: "alpha") {
                                _ throws(VaultError) in ()
                            }
                            return "taken"
                        } catch {
                            return (error as? VaultError)?.code.rawValue ?? "\(error)"
                        }
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "taken" }.count == 1, "\(outcomes)")
            #expect(outcomes.filter { $0 == VaultError.Code.registrationExpired.rawValue }.count == 7, "\(outcomes)")
        }
    }
}
