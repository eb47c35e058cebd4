import ApplePay
import Foundation
import PKCS11
import PaywardenPrimitives
import PaywardenStorage
import PaywardenStorageSQL
import PaywardenStorageSQLite
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing
import Vault

/// The vault on a real SoftHSM token and a real SQLite file: static tokens, organisations,
/// sealed records bound to their rows, and key rotation while redemptions run.
@Suite(.serialized, .releasesTestResources)
struct VaultTests {
    /// A vault on a fresh token and database, with a clock the test moves.
    final class Environment: Sendable {
        let token: TestToken
        let hsm: HSM
        let database: SQLDatabase<SQLiteDriver>
        let vault: CardVault
        let clock = MovableClock()

        /// `device` puts the fault-injecting module between the vault and SoftHSM.
        init(device: FaultInjectingPKCS11? = nil, policy: VaultPolicy = VaultPolicy(retiredKeyGrace: 0)) async throws {
            // The fault-injecting module forwards to SoftHSM: a test that uses it runs there on either pass.
            token = try await TestToken.make(labelPrefix: "vault", backend: device == nil ? .current : .softHSM)
            if let device { hsm = try await device.open(token) } else { hsm = try await token.open() }
            let directory = NSTemporaryDirectory() + "paywarden-vault-\(UUID().uuidString.prefix(8))"
            TestResources.track(directory: directory)
            database = try SQLiteDriver.open(path: directory + "/vault.sqlite")
            _ = try await database.migrate()
            let clock = self.clock
            vault = CardVault(database: database, keyring: VaultKeyring(hsm: hsm), policy: policy, clock: { clock.now })
            _ = try await vault.keyring.createMissing()
            for (id, organization, format) in [("paypageA", "alpha" as OrganizationID, HighValueTokenFormat.t), ("paypageB", "beta", .d)] {
                _ = try await vault.createPaypage(
                    id: id, organization: organization, merchantIdentifiers: ["merchant.com.\(organization)"], reportGroups: [],
                    tokenFormat: format)
            }
        }

        func close() async {
            await hsm.close()
            token.destroy()
        }

        func paypage(_ id: String) async throws -> PaypageRecord {
            try #require(try await database.paypage(id: id))
        }

        /// A decrypted token as the engine hands it over, with `payload`.
        static func decrypted(_ payload: [UInt8]) throws -> DecryptedPaymentToken {
            try DecryptedPaymentToken(
                paymentData: payload, version: .ecV1, transactionID: String(repeating: "ab", count: 32),
                publicKeyHash: "LbsUwAT6w1JV9tFXocU813TCHks+LSuFF0R/eBkrWnQ=", signingTime: Date(), keyID: "00",
                merchantIdentifierHash: String(repeating: "0", count: 64))
        }
    }

    func withEnvironment(
        device: FaultInjectingPKCS11? = nil, policy: VaultPolicy = VaultPolicy(retiredKeyGrace: 0),
        _ body: (Environment) async throws -> Void
    ) async throws {
        let environment = try await Environment(device: device, policy: policy)
        do {
            try await body(environment)
            await environment.close()
        } catch {
            await environment.close()
            throw error
        }
    }

    @Test func tokensAreStaticPerAccountNumberAndOrganisation() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let alpha = try #require(OrganizationPolicy(paypage: try await environment.paypage("paypageA")))
            let beta = try #require(OrganizationPolicy(paypage: try await environment.paypage("paypageB")))
            let dpan = try AccountFacts(paymentData: PaymentPayloads.threeDSecure(pan: "4111111111111111"))
            let first = try await vault.issueToken(for: dpan, policy: alpha)
            let second = try await vault.issueToken(for: dpan, policy: alpha)
            #expect(first.responseCode == "801" && second.responseCode == "802" && first.token == second.token)
            #expect(first.kind == .devicePAN && !first.kind.recurringEligible)
            // Another organisation gets its own token for the same account number, in its own format.
            let other = try await vault.issueToken(for: dpan, policy: beta)
            #expect(other.responseCode == "801" && other.token != first.token && other.format == .d)
            // A new expiry is the same account: the fingerprint is of the account number alone.
            let renewed = try AccountFacts(
                paymentData: Array(
                    String(decoding: PaymentPayloads.threeDSecure(), as: UTF8.self)
                        .replacingOccurrences(of: "291231", with: "311231").utf8))
            #expect(try await vault.issueToken(for: renewed, policy: alpha).token == first.token)
            // …and the token keeps the newest expiry.
            #expect(try await vault.detokenize(first.token, organization: "alpha").expirationDate == "311231")
            // A merchant token is an MPAN, with its identifier kept.
            let mpan = try AccountFacts(paymentData: PaymentPayloads.merchantToken())
            let merchantToken = try await vault.issueToken(for: mpan, policy: alpha)
            #expect(merchantToken.kind == .merchantPAN && merchantToken.merchantTokenIdentifier == "DNITHE302409093402145671")
            let account = try await vault.detokenize(merchantToken.token, organization: "alpha")
            #expect(account.accountNumber.revealed == "5204245250001488" && account.expirationDate == "300531")
            #expect("\(account.accountNumber)" == "<redacted account number>")
            do {
                _ = try await vault.detokenize(merchantToken.token, organization: "beta")
                Issue.record("another organisation detokenized a token")
            } catch {
                #expect((error as? VaultError)?.code == .tokenNotFound)
            }
        }
    }

    @Test func aSealedRecordMovedToAnotherRowDoesNotOpen() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let alpha = try #require(OrganizationPolicy(paypage: try await environment.paypage("paypageA")))
            let one = try await vault.issueToken(
                for: try AccountFacts(paymentData: PaymentPayloads.threeDSecure(pan: "4111111111111111")), policy: alpha)
            let two = try await vault.issueToken(
                for: try AccountFacts(paymentData: PaymentPayloads.threeDSecure(pan: "5555555555554444")), policy: alpha)
            let donor = try #require(try await environment.database.token(two.token, organization: "alpha"))
            _ = try await environment.database.updateToken(
                one.token, organization: "alpha", state: .active, sealed: donor.sealed, at: Date())
            do {
                _ = try await vault.detokenize(one.token, organization: "alpha")
                Issue.record("a ciphertext moved between rows opened")
            } catch {
                #expect((error as? VaultError)?.code == .recordUnreadable)
            }
            #expect(try await vault.detokenize(two.token, organization: "alpha").accountNumber.revealed == "5555555555554444")
        }
    }

    @Test func rotatingEveryKeyWhileRedeeming() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let paypage = try await environment.paypage("paypageA")
            let pans = (0..<12).map { "41111111111\(String(format: "%05d", $0))" }
            var ids: [String] = []
            for pan in pans + pans {
                ids.append(
                    try await vault.register(Environment.decrypted(PaymentPayloads.threeDSecure(pan: pan)), paypage: paypage).id.value)
            }
            var tokens: [String: String] = [:]
            for (index, pan) in pans.enumerated() {
                tokens[pan] = try await vault.redeem(PresentedRegistrationID(ids[index]), organization: "alpha").highValueToken.token
            }
            let before = Dictionary(uniqueKeysWithValues: VaultKeyPurpose.allCases.map { ($0, vault.keyring.keys($0)) })
            for purpose in VaultKeyPurpose.allCases { try await vault.keyring.create(purpose) }

            // The re-wrap job in small steps, and every registration redeemed meanwhile.
            let steps = Task {
                var moved = 0
                for _ in 0..<50 {
                    let step = try await vault.rotationStep(batch: 3)
                    moved += step.moved
                    if step.moved == 0 && !step.destroyed.isEmpty { break }
                }
                return moved
            }
            for (index, id) in ids.enumerated() {
                let redemption = try await vault.redeem(PresentedRegistrationID(id), organization: "alpha")
                #expect(redemption.highValueToken.token == tokens[pans[index % pans.count]])
                #expect(redemption.highValueToken.responseCode == "802")
            }
            #expect(try await steps.value == 24 + 12 + 12)

            let status = try await vault.status()
            for purpose in status.purposes {
                #expect(purpose.pending == 0, "\(purpose.purpose)")
            }
            // The old KEKs are gone; the old HMAC key stays while registrations hashed with it live.
            for purpose in [VaultKeyPurpose.registrations, .tokens] {
                #expect(vault.keyring.keys(purpose).count == 1 && vault.keyring.keys(purpose).first != before[purpose]?.first)
            }
            let fingerprint = try #require(status.purposes.first { $0.purpose == "fingerprint" })
            #expect(fingerprint.keys.count == 2 && fingerprint.keys.last?.registrationsHashed == 24)
            for (pan, token) in tokens {
                #expect(try await vault.detokenize(token, organization: "alpha").accountNumber.revealed == pan)
            }
            // Once those registrations and their tombstones are purged, the old HMAC key goes too.
            environment.clock.offset = 86_400 + 7 * 86_400 + 120
            _ = try await vault.purgeRegistrations()
            environment.clock.offset = 2 * (86_400 + 7 * 86_400 + 120)
            #expect(try await vault.purgeRegistrations().tombstonesDeleted == 24)
            #expect(try await vault.rotationStep().destroyed.map(\.purpose) == [.fingerprint])
            #expect(vault.keyring.keys(.fingerprint).count == 1)
        }
    }
}

extension VaultTests {
    static let merchantTokenID = "DNITHE302409093402145671"

    /// Fails unless `body` throws a vault error with `code`.
    func expectVaultError(
        _ code: VaultError.Code, _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            Issue.record("\(what) succeeded; expected \(code.rawValue)", sourceLocation: sourceLocation)
        } catch {
            #expect((error as? VaultError)?.code == code, "\(what): \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func merchantTokenEventsUnlinkRecordMetadataAndArePurged() async throws {
        try await withEnvironment { environment in
            let vault = environment.vault
            let database = environment.database
            let alpha = try #require(OrganizationPolicy(paypage: try await environment.paypage("paypageA")))
            let beta = try #require(OrganizationPolicy(paypage: try await environment.paypage("paypageB")))
            let mpan = try AccountFacts(paymentData: PaymentPayloads.merchantToken())
            #expect(mpan.merchantTokenIdentifier == Self.merchantTokenID)
            let tokenA = try await vault.issueToken(for: mpan, policy: alpha)
            let tokenB = try await vault.issueToken(for: mpan, policy: beta)
            let otherMPAN = try AccountFacts(
                paymentData: Array(
                    String(decoding: PaymentPayloads.merchantToken(pan: "5204245250003336"), as: UTF8.self)
                        .replacingOccurrences(of: Self.merchantTokenID, with: "DNITHE000000000000000001").utf8))
            let otherToken = try await vault.issueToken(for: otherMPAN, policy: alpha)
            let dpan = try await vault.issueToken(
                for: try AccountFacts(paymentData: PaymentPayloads.threeDSecure(pan: "4111111111111111")), policy: alpha)
            // A registration of the MPAN, redeemed after the unlinking below.
            let registration = try await vault.register(
                Environment.decrypted(PaymentPayloads.merchantToken()), paypage: try await environment.paypage("paypageA"))

            #expect(try await vault.organizations(holdingMerchantToken: Self.merchantTokenID) == ["alpha", "beta"])
            // The payload's metadata is recorded at issue, canonically; a DPAN has none.
            let issuedMetadata = Array(
                (#"{"cardArt":[{"type":"FULL_CARD_ART","url":"https://example.test/art.png"}],"#
                    + #""cardMetadata":{"expirationDate":"05/30","fpanSuffix":"1488"}}"#).utf8)
            #expect(try await database.token(tokenA.token, organization: "alpha")?.merchantTokenMetadata == issuedMetadata)
            #expect(try await database.token(dpan.token, organization: "alpha")?.merchantTokenMetadata == nil)
            #expect(try await vault.organizations(holdingMerchantToken: "DNITHE000000000000000001") == ["alpha"])
            #expect(try await vault.organizations(holdingMerchantToken: "DNITHE999999999999999999").isEmpty)

            // Metadata: recorded on both organisations' tokens, the newest kept.
            let metadata = Array(#"{"cardMetadata":{"fpanSuffix":"1488","expirationDate":"05/30"}}"#.utf8)
            let recorded = try await vault.applyMerchantTokenEvent(
                type: "UPDATED_METADATA", merchantTokenID: Self.merchantTokenID, metadata: metadata)
            #expect(recorded == MerchantTokenEffect(summary: "metadata recorded on 2 tokens", tokens: 2))
            // The payload's card art, from the registration, stays beside the event's card metadata.
            let merged = Array(
                (#"{"cardArt":[{"type":"FULL_CARD_ART","url":"https://example.test/art.png"}],"#
                    + #""cardMetadata":{"expirationDate":"05/30","fpanSuffix":"1488"}}"#).utf8)
            #expect(try await database.token(tokenA.token, organization: "alpha")?.merchantTokenMetadata == merged)
            #expect(try await database.token(tokenB.token, organization: "beta")?.merchantTokenMetadata == merged)
            let cardArt = Array(#"{"cardArt":[{"name":"front","type":"FULL_CARD_ART","url":"https://example.test/a.png"}]}"#.utf8)
            let art = try await vault.applyMerchantTokenEvent(
                type: "UPDATED_CARD_ART", merchantTokenID: Self.merchantTokenID, metadata: cardArt)
            #expect(art.tokens == 2 && art.summary == "metadata recorded on 2 tokens")
            // Card art joins the card metadata recorded before; neither erases the other.
            let both = Array(
                (#"{"cardArt":[{"name":"front","type":"FULL_CARD_ART","url":"https://example.test/a.png"}],"#
                    + #""cardMetadata":{"expirationDate":"05/30","fpanSuffix":"1488"}}"#).utf8)
            #expect(try await database.token(tokenA.token, organization: "alpha")?.merchantTokenMetadata == both)
            #expect(try await database.token(otherToken.token, organization: "alpha")?.merchantTokenMetadata == issuedMetadata)

            // What the vault does not act on changes nothing.
            let before = try await database.tokens(merchantTokenID: Self.merchantTokenID)
            for (type, given) in [
                ("UPDATED_MERCHANT_TOKEN_PUBLIC_KEY", Optional(metadata)), ("SOMETHING_NEW", metadata), ("UPDATED_METADATA", nil),
                ("UPDATED_CARD_ART", []),
            ] {
                let effect = try await vault.applyMerchantTokenEvent(type: type, merchantTokenID: Self.merchantTokenID, metadata: given)
                #expect(effect == MerchantTokenEffect(summary: "recorded; no vault change for \(type)", tokens: 0))
            }
            #expect(try await database.tokens(merchantTokenID: Self.merchantTokenID) == before)

            // Unlinking: both organisations' tokens stop working, once; other tokens are untouched.
            let unlinked = try await vault.applyMerchantTokenEvent(type: "UNLINK", merchantTokenID: Self.merchantTokenID, metadata: nil)
            #expect(unlinked == MerchantTokenEffect(summary: "unlinked 2 tokens", tokens: 2))
            let again = try await vault.applyMerchantTokenEvent(type: "UNLINK", merchantTokenID: Self.merchantTokenID, metadata: nil)
            #expect(again == MerchantTokenEffect(summary: "no active token for this merchant token", tokens: 0))
            await expectVaultError(.tokenUnlinked, "detokenizing an unlinked token") {
                _ = try await vault.detokenize(tokenA.token, organization: "alpha")
            }
            await expectVaultError(.tokenUnlinked, "detokenizing the other organisation's unlinked token") {
                _ = try await vault.detokenize(tokenB.token, organization: "beta")
            }
            #expect(try await vault.detokenize(otherToken.token, organization: "alpha").accountNumber.revealed == "5204245250003336")
            #expect(try await vault.detokenize(dpan.token, organization: "alpha").accountNumber.revealed == "4111111111111111")
            // The dead merchant token is not handed out again, nor revived, by a registration or a new issue.
            await expectVaultError(.tokenUnlinked, "redeeming a registration of an unlinked merchant token") {
                _ = try await vault.redeem(PresentedRegistrationID(registration.id), organization: "alpha")
            }
            await expectVaultError(.tokenUnlinked, "issuing a token for an unlinked merchant token") {
                _ = try await vault.issueToken(for: mpan, policy: alpha)
            }
            #expect(try await database.token(tokenA.token, organization: "alpha")?.state == .unlinked)
            // Unlinked tokens still name their organisations until they are purged.
            #expect(try await vault.organizations(holdingMerchantToken: Self.merchantTokenID) == ["alpha", "beta"])

            // The purge: nothing before the retention has passed, both tokens after it, nothing else.
            #expect(vault.policy.unlinkedTokenRetention == 30 * 86_400)
            environment.clock.offset = 30 * 86_400 - 60
            #expect(try await vault.purgeUnlinkedTokens() == 0)
            environment.clock.offset = 30 * 86_400 + 60
            #expect(try await vault.purgeUnlinkedTokens() == 2)
            #expect(try await vault.purgeUnlinkedTokens() == 0)
            await expectVaultError(.tokenNotFound, "detokenizing a purged token") {
                _ = try await vault.detokenize(tokenA.token, organization: "alpha")
            }
            #expect(try await vault.organizations(holdingMerchantToken: Self.merchantTokenID).isEmpty)
            #expect(try await vault.detokenize(otherToken.token, organization: "alpha").accountNumber.revealed == "5204245250003336")
            #expect(try await vault.detokenize(dpan.token, organization: "alpha").accountNumber.revealed == "4111111111111111")
            // Once purged, the account number is new to the organisation again.
            #expect(try await vault.issueToken(for: mpan, policy: alpha).responseCode == "801")
        }
    }

    @Test func unlinkedTokenRetentionIsAPolicy() async throws {
        #expect(VaultPolicy().unlinkedTokenRetention == 30 * 86_400)
        #expect(VaultPolicy(unlinkedTokenRetention: 60).unlinkedTokenRetention == 60)
    }
}

/// Now, moved forward by `offset` seconds.
final class MovableClock: Sendable {
    private let seconds = Mutex<TimeInterval>(0)

    var offset: TimeInterval {
        get { seconds.withLock { $0 } }
        set { seconds.withLock { $0 = newValue } }
    }

    var now: Date { Date().addingTimeInterval(offset) }
}
