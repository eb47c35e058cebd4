import ApplePay
import Crypto
import Foundation
import KeyCustody
import Logging
import MerchantTokens
import OutboundTLS
import PKCS11
import PaywardenPrimitives
import PaywardenStorage
import PaywardenTestTraits
import PaywardenTesting
import Testing
import Vault

/// Usage information end to end: the merchant-token service with the real gateway client over
/// mutual TLS to the stand-in, which holds the token's "device" key and opens what it is sent; the
/// test then acts as the device (swift-crypto's HPKE recipient, Info-ZIP's unzip).
@Suite(.serialized, .releasesTestResources)
struct UsageInformationServiceTests {
    static let merchantID = "merchant.com.example.usage"
    static let merchantTokenID = "DNITHE302409093402145671"
    static let publicURL = "https://pay.example.com"

    struct Environment {
        let service: MerchantTokenService
        let standIn: AppleGatewayStandIn
        let database: InMemoryDatabase
        let vault: CardVault
    }

    func withEnvironment(forceWrapped: Bool = false, _ body: (Environment) async throws -> Void) async throws {
        try await TestToken.withOpenHSM(labelPrefix: "usage") { hsm in
            let database = InMemoryDatabase()
            let ca = try TestCertificateAuthority()
            let keys = MerchantKeyStore(hsm: hsm, records: database, certificateIssuers: ca.issuers)
            let (_, csr) = try await keys.create(merchantID: Self.merchantID, purpose: .identity, algorithm: .rsa)
            let der = try ca.issue(
                csrPEM: csr, merchantID: Self.merchantID, purpose: .identity, notBefore: Date().addingTimeInterval(-3600))
            _ = try await keys.importCertificate(try MerchantCertificate(bytes: der))
            let standIn = try await AppleGatewayStandIn.start(clientCA: ca.certificate)
            let policy = try AppleGatewayHostPolicy(patterns: AppleGatewayHostPolicy.appleHosts + ["localhost:\(standIn.port)"])
            let configuration = try AppleGatewayConfiguration(
                baseURL: standIn.baseURL, hostPolicy: policy, extraTrustRoots: [standIn.serverCA])
            var logger = Logger(label: "usage.test")
            logger.logLevel = .critical
            let client = AppleGatewayClient(hsm: hsm, keys: keys, configuration: configuration, logger: logger)

            let vault = CardVault(database: database, keyring: VaultKeyring(hsm: hsm))
            _ = try await vault.keyring.createMissing()
            let paypage = try await vault.createPaypage(
                id: "usage", organization: "example", merchantIdentifiers: [Self.merchantID], reportGroups: [], tokenFormat: .t)
            _ = try await vault.issueToken(
                for: try AccountFacts(paymentData: PaymentPayloads.merchantToken()),
                policy: try #require(OrganizationPolicy(paypage: paypage)))

            let service = MerchantTokenService(
                gateway: client, vault: vault, events: database, keys: keys, policy: MerchantTokenEventPolicy(), metrics: nil, audit: nil,
                logger: logger,
                usageInformation: UsageInformationConfiguration(
                    store: database, senderKeys: SenderKeys(hsm: hsm), publicURL: Self.publicURL, forceWrappedSenderKeys: forceWrapped))
            do {
                try await body(Environment(service: service, standIn: standIn, database: database, vault: vault))
            } catch {
                await client.shutdown()
                try? await standIn.stop()
                throw error
            }
            await client.shutdown()
            try await standIn.stop()
        }
    }

    static let document =
        Array(
            #"{"schemaVersion":1,"merchantName":"Example","merchantTokenIdentifier":"DNITHE302409093402145671","#.utf8
        ) + Array(#""modificationDate":"2026-09-20T10:00:00Z","upcomingPayments":[{"identifier":"u-1","label":"Plan","#.utf8)
        + Array(#""paymentType":"deferred","deferredPaymentDetails":{"paymentDate":"2026-12-24"}}]}"#.utf8)

    func publish(_ environment: Environment, _ document: [UInt8] = document) async throws(MerchantTokenFailure)
        -> UsageInformationRecord.State
    {
        try await environment.service.publishUsageInformation(
            merchantID: Self.merchantID, merchantTokenID: Self.merchantTokenID, document: document, organization: "example", user: "test")
    }

    /// What the device does: fetch with its token, open `data`, unzip, read usageInformation.json.
    func deviceReads(
        _ environment: Environment, device: P384.KeyAgreement.PrivateKey, notification: StandInUsageNotification
    ) async throws -> [UInt8] {
        let response = try await environment.service.usageInformationPackage(
            merchantTokenID: Self.merchantTokenID,
            authorization: "ApplePayMerchantTokenUsageInformation \(notification.authenticationToken)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response)) as? [String: String])
        #expect(
            Set(object.keys) == [
                "ciphersuite", "data", "ephemeralPublicKey", "infoHash", "merchantPublicKeyHash", "merchantTokenPublicKeyHash",
            ])
        let zip = try AppleGatewayStandIn.openEnvelope(
            object, merchantTokenID: Self.merchantTokenID, device: device, merchantPublicKey: notification.merchantPublicKey)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("usage-\(UUID().uuidString).zip")
        try Data(zip).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unzip")
        process.arguments = ["-p", path.path, "usageInformation.json"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Array(output)
    }

    @Test(arguments: [false, true])
    func aPublishedPackageOpensOnTheDeviceToTheExactDocument(forceWrapped: Bool) async throws {
        try await withEnvironment(forceWrapped: forceWrapped) { environment in
            let device = environment.standIn.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID)
            #expect(try await publish(environment) == .published)
            let notification = try #require(environment.standIn.usageNotifications.last)
            #expect(notification.webServiceURL == Self.publicURL)
            #expect(notification.authenticationToken.count >= 43)
            #expect(try await deviceReads(environment, device: device, notification: notification) == Self.document)
            let sender = try #require(try await environment.database.usageInformationSenderKey(merchantID: Self.merchantID))
            #expect(sender.custody == (forceWrapped ? "wrapped" : "hsm"))
            #expect(sender.publicKey == notification.merchantPublicKey)
            let stored = try #require(try await environment.database.usageInformation(merchantTokenID: Self.merchantTokenID))
            #expect(stored.authenticationTokenHash == Array(SHA256.hash(data: Array(notification.authenticationToken.utf8))))

            // The scheme's name in any case (RFC 9110).
            let lowercase = try await environment.service.usageInformationPackage(
                merchantTokenID: Self.merchantTokenID,
                authorization: "applepaymerchanttokenusageinformation \(notification.authenticationToken)")
            #expect(!lowercase.isEmpty)
            // 401 for a wrong token, none, or another scheme, and for a merchant token with nothing
            // published: one answer, so the route is no oracle of which merchant tokens have a package.
            for authorization in [
                "ApplePayMerchantTokenUsageInformation wrong", nil, "Bearer \(notification.authenticationToken)",
                "ApplePayMerchantTokenUsageInformation \(notification.authenticationToken)x",
            ] {
                await #expect(throws: UsageInformationAccessError.unauthorized) {
                    _ = try await environment.service.usageInformationPackage(
                        merchantTokenID: Self.merchantTokenID, authorization: authorization)
                }
            }
            await #expect(throws: UsageInformationAccessError.unauthorized) {
                _ = try await environment.service.usageInformationPackage(
                    merchantTokenID: "DNITHE000000000000000000",
                    authorization: "ApplePayMerchantTokenUsageInformation \(notification.authenticationToken)")
            }

            // Another merchant token's token opens nothing here, and this one's nothing there (U14).
            let other = "DNITHE000000000000000077"
            #expect(
                try await environment.database.saveUsageInformation(
                    UsageInformationRecord(
                        merchantTokenID: other, merchantID: Self.merchantID, organization: "example", state: .published, package: [1],
                        packageResponse: Array("{}".utf8), authenticationTokenHash: Array(SHA256.hash(data: Array("other-token".utf8))),
                        updatedAt: Date()), replacing: nil))
            #expect(
                try await environment.service.usageInformationPackage(
                    merchantTokenID: other, authorization: "ApplePayMerchantTokenUsageInformation other-token") == Array("{}".utf8))
            await #expect(throws: UsageInformationAccessError.unauthorized) {
                _ = try await environment.service.usageInformationPackage(
                    merchantTokenID: other, authorization: "ApplePayMerchantTokenUsageInformation \(notification.authenticationToken)")
            }
            await #expect(throws: UsageInformationAccessError.unauthorized) {
                _ = try await environment.service.usageInformationPackage(
                    merchantTokenID: Self.merchantTokenID, authorization: "ApplePayMerchantTokenUsageInformation other-token")
            }

            // A new PUT replaces the package and rotates the token: the old one is refused.
            let second = Array(String(decoding: Self.document, as: UTF8.self).replacingOccurrences(of: "Example", with: "Example 2").utf8)
            #expect(try await publish(environment, second) == .published)
            let rotated = try #require(environment.standIn.usageNotifications.last)
            #expect(rotated.authenticationToken != notification.authenticationToken)
            #expect(try await deviceReads(environment, device: device, notification: rotated) == second)
            await #expect(throws: UsageInformationAccessError.unauthorized) {
                _ = try await environment.service.usageInformationPackage(
                    merchantTokenID: Self.merchantTokenID,
                    authorization: "ApplePayMerchantTokenUsageInformation \(notification.authenticationToken)")
            }
        }
    }

    @Test func twoHundredTwoWaitsForTheKeyEventAndUnlinkStopsServing() async throws {
        try await withEnvironment { environment in
            environment.standIn.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID, answer: .notYetAvailable)
            #expect(try await publish(environment) == .awaitingKey)
            #expect(environment.standIn.usageNotifications.isEmpty, "no notify without the device's key")

            // The device makes its key; Apple's event resumes the publication.
            let device = environment.standIn.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID, answer: .key)
            environment.standIn.setEvent(
                "key-1", merchantID: Self.merchantID,
                .event(type: "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY", merchantTokenID: Self.merchantTokenID))
            #expect(try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "key-1"))
            #expect(await environment.service.processDueEvents() == 1)
            #expect(try await environment.database.event(id: "key-1")?.effect?.contains("usage information published") == true)
            let first = try #require(environment.standIn.usageNotifications.last)
            #expect(try await deviceReads(environment, device: device, notification: first) == Self.document)

            // The device rotates its key (U16): sealed again to the new key.
            let rotated = environment.standIn.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID, newKey: true)
            environment.standIn.setEvent(
                "key-2", merchantID: Self.merchantID,
                .event(type: "UPDATED_MERCHANT_TOKEN_PUBLIC_KEY", merchantTokenID: Self.merchantTokenID))
            #expect(try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "key-2"))
            #expect(await environment.service.processDueEvents() == 1)
            let second = try #require(environment.standIn.usageNotifications.last)
            #expect(second.authenticationToken != first.authenticationToken)
            #expect(try await deviceReads(environment, device: rotated, notification: second) == Self.document)
            await #expect(throws: (any Error).self) { _ = try await deviceReads(environment, device: device, notification: second) }

            // UNLINK (U17): no longer served; its token is answered as any other that fits nothing.
            environment.standIn.setEvent(
                "unlink-1", merchantID: Self.merchantID, .event(type: "UNLINK", merchantTokenID: Self.merchantTokenID))
            #expect(try await environment.service.receiveNotification(merchantID: Self.merchantID, eventID: "unlink-1"))
            #expect(await environment.service.processDueEvents() == 1)
            await #expect(throws: UsageInformationAccessError.unauthorized) {
                _ = try await environment.service.usageInformationPackage(
                    merchantTokenID: Self.merchantTokenID,
                    authorization: "ApplePayMerchantTokenUsageInformation \(second.authenticationToken)")
            }
            #expect(try await environment.database.usageInformation(merchantTokenID: Self.merchantTokenID) == nil)
        }
    }

    @Test func refusalsComeBeforeAnyCallOrWrite() async throws {
        try await withEnvironment { (environment) async throws -> Void in
            environment.standIn.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID, answer: .status(409))
            let conflict = await Self.failure { () async throws(MerchantTokenFailure) in try await publish(environment) }
            #expect(conflict?.code == .appleRequestRefused)
            #expect(conflict?.message.contains("tokenNotificationURL") == true)
            let stored = try await environment.database.usageInformation(merchantTokenID: Self.merchantTokenID)
            #expect(stored == nil)

            environment.standIn.clearRequests()
            let invalid = Array(
                String(decoding: Self.document, as: UTF8.self).replacingOccurrences(of: "deferred\"", with: "weekly\"").utf8)
            let refused = await Self.failure { () async throws(MerchantTokenFailure) in try await publish(environment, invalid) }
            #expect(refused?.code == .invalidRequest)
            #expect(refused?.message.contains("upcomingPayments[0].paymentType") == true)
            let otherOrganisation = await Self.failure { () async throws(MerchantTokenFailure) in
                try await environment.service.publishUsageInformation(
                    merchantID: Self.merchantID, merchantTokenID: Self.merchantTokenID, document: Self.document, organization: "other",
                    user: "test")
            }
            #expect(otherOrganisation?.code == .merchantNotAuthorized)
            #expect(environment.standIn.requests.isEmpty, "refused before any call to Apple")
        }
    }

    /// A publication Apple refuses to be notified of leaves the one before it served, to the token
    /// Apple holds; the new token's hash was recorded before the notification and is put back.
    @Test func aRefusedNotificationLeavesThePublicationBeforeIt() async throws {
        try await withEnvironment { (environment) async throws -> Void in
            let device = environment.standIn.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID)
            #expect(try await publish(environment) == .published)
            let first = try #require(environment.standIn.usageNotifications.last)
            let before = try await environment.database.usageInformation(merchantTokenID: Self.merchantTokenID)

            environment.standIn.answerUsageNotify(merchantTokenID: Self.merchantTokenID, status: 400)
            let changed = Array(String(decoding: Self.document, as: UTF8.self).replacingOccurrences(of: "Plan", with: "Plan B").utf8)
            let refused = await Self.failure { () async throws(MerchantTokenFailure) in try await publish(environment, changed) }
            #expect(refused?.code == .appleRequestRefused)
            #expect(try await environment.database.usageInformation(merchantTokenID: Self.merchantTokenID) == before)
            #expect(try await deviceReads(environment, device: device, notification: first) == Self.document)

            // Never published: nothing is left behind.
            let other = "DNITHE302409093402145672"
            environment.standIn.setUsageInformationDevice(merchantTokenID: other)
            environment.standIn.answerUsageNotify(merchantTokenID: other, status: 403)
            let unpublished = await Self.failure { () async throws(MerchantTokenFailure) in
                try await environment.service.publishUsageInformation(
                    merchantID: Self.merchantID, merchantTokenID: other,
                    document: Array(
                        String(decoding: Self.document, as: UTF8.self).replacingOccurrences(of: Self.merchantTokenID, with: other).utf8),
                    organization: nil, user: "test")
            }
            #expect(unpublished != nil)
            #expect(try await environment.database.usageInformation(merchantTokenID: other) == nil)
        }
    }

    /// Two organisations may hold one merchant token (each vaulted it): the one that published owns
    /// the package, and the other's PUT is refused with nothing sent or changed.
    @Test func anotherOrganisationHoldingTheTokenCannotReplaceThePackage() async throws {
        try await withEnvironment { (environment) async throws -> Void in
            let rival = try await environment.vault.createPaypage(
                id: "rival", organization: "rival", merchantIdentifiers: [Self.merchantID], reportGroups: [], tokenFormat: .t)
            _ = try await environment.vault.issueToken(
                for: try AccountFacts(paymentData: PaymentPayloads.merchantToken()),
                policy: try #require(OrganizationPolicy(paypage: rival)))
            environment.standIn.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID)
            #expect(try await publish(environment) == .published)
            let notifications = environment.standIn.usageNotifications.count
            let replaced = await Self.failure { () async throws(MerchantTokenFailure) in
                try await environment.service.publishUsageInformation(
                    merchantID: Self.merchantID, merchantTokenID: Self.merchantTokenID, document: Self.document, organization: "rival",
                    user: "test")
            }
            #expect(replaced?.code == .merchantNotAuthorized && replaced?.message.contains("another organisation") == true)
            #expect(environment.standIn.usageNotifications.count == notifications)
            let stored = try await environment.database.usageInformation(merchantTokenID: Self.merchantTokenID)
            #expect(stored?.organization == "example")
        }
    }

    /// A package an admin published (no organisation: the service's callers with every right) is
    /// replaced by an admin only, not by whichever organisation holds the merchant token.
    @Test func anAdminsPublicationIsNotReplacedByAnOrganisation() async throws {
        try await withEnvironment { (environment) async throws -> Void in
            environment.standIn.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID)
            func publish(as organization: OrganizationID?) async throws(MerchantTokenFailure) -> UsageInformationRecord.State {
                try await environment.service.publishUsageInformation(
                    merchantID: Self.merchantID, merchantTokenID: Self.merchantTokenID, document: Self.document, organization: organization,
                    user: "test")
            }
            #expect(try await publish(as: nil) == .published)
            let replaced = await Self.failure { () async throws(MerchantTokenFailure) in try await publish(as: "example") }
            #expect(replaced?.code == .merchantNotAuthorized, "\(String(describing: replaced))")
            #expect(environment.standIn.usageNotifications.count == 1, "Apple was told of the organisation's package")
            #expect(try await environment.database.usageInformation(merchantTokenID: Self.merchantTokenID)?.organization == "")
            #expect(try await publish(as: nil) == .published)
        }
    }

    static func failure(_ call: () async throws(MerchantTokenFailure) -> UsageInformationRecord.State) async -> MerchantTokenFailure? {
        do {
            _ = try await call()
            Issue.record("accepted where a refusal was expected")
            return nil
        } catch {
            return error
        }
    }
}
