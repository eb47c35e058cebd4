import Foundation
import KeyCustody
import MerchantTokens
import OutboundTLS
import PKCS11
import PaywardenStorage
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing
import Vault

/// The merchant-token outbox without a socket: the service over a real HSM token (the merchant's
/// identity key, the vault's keyring) and the in-memory event store, with Apple's answers given in
/// process as the JSON Apple sends. What it holds: an event recorded once and applied once, the
/// back-off and the giving up, the pending limit, and another instance's claim.
@Suite(.serialized, .releasesTestResources)
struct MerchantTokenOutboxTests {
    static let merchantID = "merchant.com.example.outbox"
    /// The merchant token of ``PaymentPayloads/merchantToken(pan:)``.
    static let merchantTokenID = "DNITHE302409093402145671"

    /// Apple, answering in process: each event id's scripted answers in order (the last repeats),
    /// and how many fetches were made.
    final class ScriptedAppleGateway: MerchantTokenGateway {
        private let answers = Mutex<[String: [Result<[UInt8], AppleGatewayError>]]>([:])
        private let fetches = Mutex(0)

        func script(_ eventID: String, _ results: Result<[UInt8], AppleGatewayError>...) {
            answers.withLock { $0[eventID] = results }
        }

        var fetchCount: Int { fetches.withLock { $0 } }

        func merchantTokenEvent(merchantID: String, eventID: String) async throws(AppleGatewayError) -> MerchantTokenEventDetails {
            fetches.withLock { $0 += 1 }
            let answer = answers.withLock { scripted -> Result<[UInt8], AppleGatewayError> in
                guard let next = scripted[eventID]?.first else { return .failure(AppleGatewayError(.eventNotFound, "no such event")) }
                if scripted[eventID]!.count > 1 { scripted[eventID]!.removeFirst() }
                return next
            }
            return try MerchantTokenEventDetails(json: try answer.get())
        }

        func unlink(merchantID: String, merchantTokenID: String) async throws(AppleGatewayError) {}
        func updateNotificationURL(merchantID: String, merchantTokenID: String, url: String) async throws(AppleGatewayError) {}
        func paymentSession(_ request: PaymentSessionRequest) async throws(AppleGatewayError) -> [UInt8] { [] }
        func shutdown() async {}
    }

    struct Environment: Sendable {
        let service: MerchantTokenService
        let vault: CardVault
        let apple: ScriptedAppleGateway
        let events: InMemoryDatabase
        let clock: SettableClock
    }

    func withEnvironment(pendingLimit: Int = 10_000, _ body: (Environment) async throws -> Void) async throws {
        try await TestToken.withOpenHSM(labelPrefix: "outbox") { hsm in
            let database = InMemoryDatabase()
            let clock = SettableClock()
            let keys = MerchantKeyStore(hsm: hsm, records: database, clock: { clock.now })
            _ = try await keys.create(merchantID: Self.merchantID, purpose: .identity, algorithm: .rsa)
            let vault = CardVault(database: database, keyring: VaultKeyring(hsm: hsm), clock: { clock.now })
            let apple = ScriptedAppleGateway()
            let service = MerchantTokenService(
                gateway: apple, vault: vault, events: database, keys: keys,
                policy: MerchantTokenEventPolicy(pendingLimit: pendingLimit, retryBase: 30), metrics: nil, audit: nil,
                logger: .init(label: "test"))
            try await body(Environment(service: service, vault: vault, apple: apple, events: database, clock: clock))
        }
    }

    /// The service's refusal, or nil (recorded as an issue) when it accepted.
    static func refusal(_ call: () async throws(MerchantTokenFailure) -> Bool) async -> MerchantTokenFailure? {
        do {
            _ = try await call()
            Issue.record("accepted where a refusal was expected")
            return nil
        } catch {
            return error
        }
    }

    static func event(_ type: String, token: String = merchantTokenID) -> Result<[UInt8], AppleGatewayError> {
        .success(Array(#"{"eventType":"\#(type)","merchantTokenIdentifier":"\#(token)","reason":"user"}"#.utf8))
    }

    @Test func anUnlinkEventIsRecordedOnceFetchedOnceAndEndsTheVaultsTokens() async throws {
        try await withEnvironment { environment in
            // A high-value token for the merchant token the event unlinks.
            let vault = environment.vault
            _ = try await vault.keyring.createMissing()
            let paypage = try await vault.createPaypage(
                id: "outbox", organization: "example", merchantIdentifiers: [Self.merchantID], reportGroups: [], tokenFormat: .t)
            let policy = try #require(OrganizationPolicy(paypage: paypage))
            let issued = try await vault.issueToken(for: try AccountFacts(paymentData: PaymentPayloads.merchantToken()), policy: policy)
            #expect(try await environment.events.tokens(merchantTokenID: Self.merchantTokenID).map(\.state) == [.active])

            environment.apple.script("event-1", Self.event("UNLINK"))
            #expect(try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "event-1"))
            // Apple repeats itself: the second notification is answered, and nothing happens twice.
            #expect(try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "event-1") == false)
            #expect(environment.service.takeWakeUp())
            #expect(await environment.service.processDueEvents() == 1)
            #expect(await environment.service.processDueEvents() == 0)
            #expect(environment.apple.fetchCount == 1)
            let stored = try #require(try await environment.events.event(id: "event-1"))
            #expect(stored.state == .applied)
            #expect(stored.attempts == 1)
            #expect(stored.eventType == "UNLINK")
            #expect(stored.merchantTokenID == Self.merchantTokenID)
            #expect(stored.lastError == nil)
            #expect(stored.effect == "unlinked 1 token")
            #expect(try await environment.events.tokens(merchantTokenID: Self.merchantTokenID).map(\.state) == [.unlinked])
            await #expect(throws: VaultError.self) { _ = try await vault.detokenize(issued.token, organization: "example") }
        }
    }

    @Test func aMerchantWithoutAnIdentityKeyIsRefusedBeforeAnyWrite() async throws {
        try await withEnvironment { (environment: Environment) async throws in
            let refusal = await Self.refusal { () async throws(MerchantTokenFailure) -> Bool in
                try await environment.service.receiveNotification(merchantID: "merchant.com.example.unknown", eventID: "event-2")
            }
            #expect(refusal?.code == .unknownMerchant)
            #expect(try await environment.events.event(id: "event-2") == nil)
            #expect(environment.service.takeWakeUp() == false)
        }
    }

    @Test func aFailureThatMayPassIsRetriedWithBackOffAndOneThatCannotIsGivenUp() async throws {
        try await withEnvironment { environment in
            let unavailable = AppleGatewayError(.upstreamUnavailable, "connection refused")
            let invalid = AppleGatewayError(.responseInvalid, "not JSON")
            environment.apple.script("event-3", .failure(unavailable), .failure(unavailable), .failure(invalid))
            _ = try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "event-3")
            let received = environment.clock.now

            #expect(await environment.service.processDueEvents() == 1)
            var stored = try #require(try await environment.events.event(id: "event-3"))
            #expect(stored.state == .pending)
            #expect(stored.attempts == 1)
            #expect(stored.nextAttemptAt == received.addingTimeInterval(30))
            #expect(stored.lastError?.hasPrefix("upstream_unavailable") == true)
            // Not due before its time.
            #expect(await environment.service.processDueEvents() == 0)

            environment.clock.advance(by: 30)
            #expect(await environment.service.processDueEvents() == 1)
            stored = try #require(try await environment.events.event(id: "event-3"))
            #expect(stored.state == .pending)
            #expect(stored.attempts == 2)
            #expect(stored.nextAttemptAt == environment.clock.now.addingTimeInterval(60))

            environment.clock.advance(by: 60)
            #expect(await environment.service.processDueEvents() == 1)
            stored = try #require(try await environment.events.event(id: "event-3"))
            #expect(stored.state == .failed)
            #expect(stored.attempts == 3)
            #expect(stored.lastError?.hasPrefix("apple_response_invalid") == true)
            #expect(environment.apple.fetchCount == 3)
        }
    }

    @Test func anEventApplesRetentionHasPassedIsNotRetried() async throws {
        try await withEnvironment { environment in
            environment.apple.script("event-4", .failure(AppleGatewayError(.upstreamUnavailable, "connection refused")))
            _ = try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "event-4")
            // Seven days on, Apple no longer keeps the event's details: the attempt is the last.
            environment.clock.advance(by: 7 * 86_400)
            #expect(await environment.service.processDueEvents() == 1)
            let stored = try #require(try await environment.events.event(id: "event-4"))
            #expect(stored.state == .failed)
        }
    }

    @Test func overThePendingLimitANewEventIsRefusedAndARepeatIsStillAnswered() async throws {
        try await withEnvironment(pendingLimit: 1) { (environment: Environment) async throws in
            #expect(try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "event-5"))
            let refusal = await Self.refusal { () async throws(MerchantTokenFailure) -> Bool in
                try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "event-6")
            }
            #expect(refusal?.code == .overloaded)
            #expect(try await environment.events.event(id: "event-6") == nil)
            #expect(try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "event-5") == false)
        }
    }

    @Test func anEventAnotherInstanceClaimedIsLeftToIt() async throws {
        try await withEnvironment { environment in
            environment.apple.script("event-7", Self.event("UPDATED_CARD_ART"))
            _ = try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "event-7")
            let recorded = try #require(try await environment.events.event(id: "event-7"))
            // Two instances read the same row; the first claim wins and the second does nothing.
            #expect(try await environment.service.process(recorded)?.state == .applied)
            #expect(try await environment.service.process(recorded) == nil)
            #expect(environment.apple.fetchCount == 1)
        }
    }
}
