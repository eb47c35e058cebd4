import ApplePay
import Foundation
import PKCS11
import PaywardenStorage
import PaywardenStorageSQL
import PaywardenTesting
import Testing

@testable import Vault

/// Rows edited in the database, and keys changed by another instance, against the vault on a real
/// SoftHSM token and SQLite file: what a moved or altered row opens (nothing), and which key a
/// registration is sealed and hashed under.
extension VaultTests {
    /// Runs `sql` on the environment's database as an intruder with write access would.
    func edit(_ environment: Environment, _ sql: String, _ binds: [SQLValue] = []) async throws {
        _ = try await environment.database.engine.execute(sql, binds, writes: true)
    }

    /// The merchant-token payload with its expiry changed to `expiry` (YYMMDD).
    static func merchantToken(expiry: String) throws -> AccountFacts {
        try AccountFacts(
            paymentData: Array(
                String(decoding: PaymentPayloads.merchantToken(), as: UTF8.self).replacingOccurrences(of: "300531", with: expiry).utf8))
    }

    // MARK: An unlink is never overwritten (issue 25, finding 4)

    /// An UNLINK landing while a registration of the same account updates the token's expiry (the
    /// update holds the HSM for two round trips) stays: the token is not revived, and the purge
    /// destroys it when its retention ends.
    @Test func anUnlinkDuringAnExpiryUpdateIsNotOverwritten() async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withEnvironment(device: device) { environment in
            let vault = environment.vault
            let alpha = try #require(OrganizationPolicy(paypage: try await environment.paypage("paypageA")))
            let issued = try await vault.issueToken(for: try AccountFacts(paymentData: PaymentPayloads.merchantToken()), policy: alpha)
            // The renewal's new sealed payload is held at the HSM's key wrap while the unlink lands.
            try device.hang("C_WrapKey", times: 1)
            let renewal = Task { try await vault.issueToken(for: try Self.merchantToken(expiry: "310531"), policy: alpha) }
            try await device.waitUntilHung("C_WrapKey")
            let unlinked = try await vault.applyMerchantTokenEvent(type: "UNLINK", merchantTokenID: Self.merchantTokenID, metadata: nil)
            #expect(unlinked.tokens == 1)
            try device.release("C_WrapKey")
            await expectVaultError(.tokenUnlinked, "the renewal that raced the unlink") { _ = try await renewal.value }
            let row = try #require(try await environment.database.token(issued.token, organization: "alpha"))
            #expect(row.state == .unlinked, "the unlinked token came back as \(row.state)")
            await expectVaultError(.tokenUnlinked, "detokenizing the unlinked token") {
                _ = try await vault.detokenize(issued.token, organization: "alpha")
            }
            environment.clock.offset = vault.policy.unlinkedTokenRetention + 60
            #expect(try await vault.purgeUnlinkedTokens() == 1)
        }
    }

    // MARK: Rows bound to their paypage and account (issue 25, finding 6)

    /// A registration whose row is moved to another organisation's paypage does not redeem, and
    /// no token is issued in either organisation.
    @Test func aRegistrationMovedToAnotherOrganisationsPaypageDoesNotRedeem() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let registration = try await vault.register(
                Environment.decrypted(PaymentPayloads.threeDSecure(pan: "4111111111111111")),
                paypage: try await environment.paypage("paypageA"))
            try await edit(environment, "UPDATE registrations SET paypage_id = 'paypageB'")
            await expectVaultError(.recordUnreadable, "redeeming a registration moved to beta's paypage") {
                _ = try await vault.redeem(PresentedRegistrationID(registration.id), organization: "alpha")
            }
            let tokens = try await environment.database.rowCounts().first { $0.table == "high_value_tokens" }?.rows
            #expect(tokens == 0, "a token was issued for a moved registration")
        }
    }

    /// A registration moved to another paypage of its own organisation does not redeem either: the
    /// paypage is bound to the sealed payload, not only checked against the organisation.
    @Test func aRegistrationMovedToAnotherPaypageOfItsOrganisationDoesNotRedeem() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            _ = try await vault.createPaypage(
                id: "paypageA2", organization: "alpha", merchantIdentifiers: ["merchant.com.alpha"], reportGroups: [], tokenFormat: .t)
            let registration = try await vault.register(
                Environment.decrypted(PaymentPayloads.threeDSecure(pan: "4111111111111111")),
                paypage: try await environment.paypage("paypageA"))
            try await edit(environment, "UPDATE registrations SET paypage_id = 'paypageA2'")
            await expectVaultError(.recordUnreadable, "redeeming a registration moved to another paypage") {
                _ = try await vault.redeem(PresentedRegistrationID(registration.id), organization: "alpha")
            }
        }
    }

    /// A registration sealed before the paypage was bound (format 1, as earlier builds sealed it)
    /// still redeems; moved to another organisation's paypage, it is refused by the organisation
    /// check, as the seal cannot catch it.
    @Test func aRegistrationSealedInFormatOneStillRedeemsAndIsCheckedAgainstItsPaypage() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let payload = PaymentPayloads.threeDSecure(pan: "4111111111111111")
            let registration = try await vault.register(Environment.decrypted(payload), paypage: try await environment.paypage("paypageA"))
            let key = try vault.keyring.current(.registrations)
            let row = try #require(try await environment.database.registrations(sealedWith: key.id.hex, limit: 10).first)
            let sealed = try #require(row.sealed)
            #expect(sealed.version == 2)
            let bound = SealContext(kind: .registration, organization: "alpha", recordID: row.lookupKey, paypageID: "paypageA")
            let legacy = try await vault.sealer.seal(
                try await vault.sealer.open(sealed, with: key, context: bound), under: key,
                context: SealContext(kind: .registration, organization: "alpha", recordID: row.lookupKey))
            #expect(legacy.version == 1)
            #expect(try await environment.database.resealRegistration(lookupKey: row.lookupKey, previousKeyID: key.id.hex, sealed: legacy))
            #expect(try await vault.redeem(PresentedRegistrationID(registration.id), organization: "alpha").paymentData == payload)
            try await edit(environment, "UPDATE registrations SET paypage_id = 'paypageB'")
            await expectVaultError(.recordUnreadable, "redeeming a format-1 registration moved to beta's paypage") {
                _ = try await vault.redeem(PresentedRegistrationID(registration.id), organization: "alpha")
            }
            // Its format cannot be changed to skip the paypage: the version is bound too.
            try await edit(environment, "UPDATE registrations SET paypage_id = 'paypageA', payload_version = 2")
            await expectVaultError(.recordUnreadable, "redeeming a format-1 registration relabelled format 2") {
                _ = try await vault.redeem(PresentedRegistrationID(registration.id), organization: "alpha")
            }
        }
    }

    /// A token row given another account's fingerprint is not handed out for that account, nor
    /// re-sealed with its expiry.
    @Test func aTokenRowGivenAnotherAccountsFingerprintIsNotHandedOut() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let alpha = try #require(OrganizationPolicy(paypage: try await environment.paypage("paypageA")))
            let one = try await vault.issueToken(
                for: try AccountFacts(paymentData: PaymentPayloads.threeDSecure(pan: "4111111111111111")), policy: alpha)
            let twoFacts = try AccountFacts(paymentData: PaymentPayloads.threeDSecure(pan: "5555555555554444"))
            let two = try await vault.issueToken(for: twoFacts, policy: alpha)
            let donor = try #require(try await environment.database.token(two.token, organization: "alpha"))
            // Token one's row now claims account two's fingerprint (account two's own row gone).
            try await edit(environment, "DELETE FROM high_value_tokens WHERE token = $1", [.text(two.token)])
            try await edit(
                environment, "UPDATE high_value_tokens SET fingerprint = $1 WHERE token = $2", [.blob(donor.fingerprint), .text(one.token)])
            await expectVaultError(.recordUnreadable, "issuing account two's token from a row holding account one") {
                _ = try await vault.issueToken(for: twoFacts, policy: alpha)
            }
            #expect(try await vault.detokenize(one.token, organization: "alpha").accountNumber.revealed == "4111111111111111")
        }
    }

    // MARK: Keys another instance changed (issue 25, finding 7)

    /// A registration is sealed and hashed under the keys the HSM has now when the keyring is
    /// older than its refresh interval, not under those the maintenance loop last read.
    @Test func aRegistrationIsSealedUnderAKeyAnotherInstanceCreated() async throws {
        try await withEnvironment(policy: VaultPolicy(retiredKeyGrace: 0, keyRefreshInterval: 0)) { environment in
            let other = VaultKeyring(hsm: environment.hsm)
            try await other.refresh()
            let kek = try await other.create(.registrations)
            _ = try await environment.vault.register(
                Environment.decrypted(PaymentPayloads.threeDSecure(pan: "4111111111111111")),
                paypage: try await environment.paypage("paypageA"))
            let sealed = try await environment.database.registrations(sealedWith: kek.id.hex, limit: 10)
            #expect(sealed.count == 1, "the registration was not sealed under the key another instance made current")
        }
    }

    /// An instance that has not yet read a new HMAC key hashes a registration's look-up under the
    /// old one, after the new one was created: the old key waits for that registration, whatever
    /// the times say, so the ID stays redeemable.
    @Test func anOldLookupKeyWaitsForTheRegistrationsItHashed() async throws {
        try await withEnvironment(policy: VaultPolicy(retiredKeyGrace: 0, keyRefreshInterval: 3600)) { environment in
            let stale = environment.vault
            let current = CardVault(
                database: environment.database, keyring: VaultKeyring(hsm: environment.hsm), policy: VaultPolicy(retiredKeyGrace: 0))
            try await current.keyring.refresh()
            let old = try current.keyring.current(.fingerprint)
            _ = try await current.keyring.create(.fingerprint)
            // The stale instance's clock runs ahead: its registration is "created" after the new key.
            environment.clock.offset = 120
            let registration = try await stale.register(
                Environment.decrypted(PaymentPayloads.threeDSecure(pan: "4111111111111111")),
                paypage: try await environment.paypage("paypageA"))
            let step = try await current.rotationStep()
            #expect(!step.destroyed.contains(old), "the HMAC key a live registration was hashed under was destroyed")
            let redeemed = try await current.redeem(PresentedRegistrationID(registration.id), organization: "alpha")
            #expect(redeemed.redemptions == 1)
        }
    }
}
