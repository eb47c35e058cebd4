import ApplePay
import Foundation
import KeyCustody
import Logging
import PKCS11
import PaywardenPrimitives
import PaywardenServices
import PaywardenStorage
import PaywardenTestTraits
import PaywardenTesting
import ProcessorRelays
import Testing
import Vault

/// The vault behind the relays, without a socket: the real `VaultService` over a token of this run's
/// HSM (a merchant's processing key certified by the test CA, the vault's keyring) and the in-memory
/// database, an organisation with a paypage for that merchant, another organisation, and API keys
/// with and without the `detokenize` scope. Tokens are forged by the test PKI, which the decryption
/// service trusts.
struct RelayTestVault: Sendable {
    static let organization: OrganizationID = "example"
    static let otherOrganization: OrganizationID = "other"
    static let merchantID = "merchant.com.example.relay"
    static let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="

    let vault: CardVault
    let service: VaultService
    let paypage: PaypageRecord
    let otherPaypage: PaypageRecord
    let merchant: MerchantKey
    let forge: TokenForge
    let audit: AuditLog
    /// `redeem` and `detokenize`, for ``organization``.
    let key: APIKey
    /// `redeem` only.
    let redeemOnlyKey: APIKey

    static func with(_ body: (RelayTestVault) async throws -> Void) async throws {
        try await TestToken.withOpenHSM(labelPrefix: "relay") { hsm in
            let database = InMemoryDatabase()
            let logger = Logger(label: "test")
            let metrics = ServerMetrics()
            let vault = CardVault(database: database, keyring: VaultKeyring(hsm: hsm))
            _ = try await vault.keyring.createMissing()
            let paypage = try await vault.createPaypage(
                id: "relay", organization: organization, merchantIdentifiers: [merchantID], reportGroups: [], tokenFormat: .t)
            let otherPaypage = try await vault.createPaypage(
                id: "other", organization: otherOrganization, merchantIdentifiers: ["merchant.com.other"], reportGroups: [],
                tokenFormat: .t)
            let store = MerchantKeyStore(hsm: hsm, records: database, certificateIssuers: TestCertificateAuthority.shared.issuers)
            let merchant = try await store.certifiedProcessingKey(merchantID: merchantID, .ec)
            // The schema is current, as the server's start-up finds it before it serves.
            let health = DatabaseHealthService(database: database, metrics: metrics, logger: logger)
            health.started()
            let decryption = DecryptionService(
                hsm: hsm, store: store,
                verification: TokenSignatureVerifier(
                    anchors: TrustAnchors(certificates: [DecryptionTestEnvironment.sharedPKI.root], source: "test root"),
                    signingTimeWindow: 300),
                maxInFlight: nil, recycleEvery: 0, metrics: metrics,
                database: health, readiness: HSMReadiness(metrics: metrics, logger: logger), logger: logger)
            // The key map is loaded as the running service loads it.
            await HSMMaintenanceService(decryption: decryption, metrics: metrics, refreshInterval: .seconds(3600), logger: logger).refresh()
            let directory = NSTemporaryDirectory() + "paywarden-relay-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            TestResources.track(directory: directory)
            let audit = AuditLog(path: directory + "/audit.jsonl")
            let service = VaultService(vault: vault, decryption: decryption, metrics: metrics, audit: audit, logger: logger)
            func key(_ name: String, _ scopes: [APIScope]) throws -> APIKey {
                try APIKey(entry: APIKey.generate(name: name, scopes: scopes, organization: organization).entry)
            }
            try await body(
                RelayTestVault(
                    vault: vault, service: service, paypage: paypage, otherPaypage: otherPaypage, merchant: merchant,
                    forge: TokenForge(pki: DecryptionTestEnvironment.sharedPKI), audit: audit,
                    key: try key("merchant", [.redeem, .detokenize]), redeemOnlyKey: try key("checkout", [.redeem])))
        }
    }

    /// An Apple Pay token's `paymentData` (JSON) for the organisation's merchant, with a fresh transaction id.
    func applePayToken(_ payload: [UInt8]) throws -> [UInt8] {
        try forge.ecToken(to: merchant, payload: payload)
    }

    /// A registration of `payload` on `paypage` (the organisation's own by default) as eProtect
    /// makes one: its ID.
    func register(_ payload: [UInt8], paypage: PaypageRecord? = nil) async throws -> String {
        let token = try DecryptedPaymentToken(
            paymentData: payload, version: .ecV1, transactionID: UUID().uuidString, publicKeyHash: "hash", signingTime: Date(),
            keyID: "00", merchantIdentifierHash: String(repeating: "0", count: 64))
        return try await vault.register(token, paypage: paypage ?? self.paypage).id.value
    }

    /// A high-value token stored for `payload`'s account (a DPAN's, or an MPAN's when the payload
    /// has a merchant token identifier) in `organization`.
    func storedToken(_ payload: [UInt8], organization: OrganizationID = organization) async throws -> String {
        let policy = try await service.organizationPolicy(organization)
        return try await vault.issueToken(for: AccountFacts(paymentData: payload), policy: policy).token
    }

    /// The audit log's lines as `action result detail`, oldest first.
    func auditLines() throws -> [String] {
        try audit.records().map { "\($0.action) \($0.result) \($0.detail ?? "")" }
    }
}
