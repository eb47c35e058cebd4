import ApplePay
import Foundation
import Logging
import PKCS11
import PaywardenPrimitives
import PaywardenStorage

/// The vault: registration IDs, high-value tokens and paypages, every payload sealed under the
/// HSM's vault keys. Speaks to the stores' protocols only; the HTTP layer and the CLI call it.
public final class CardVault: Sendable {
    /// The stores' protocols, the vault's own: callers outside it go through its methods, and the
    /// composition root hands other services (the merchant-token outbox) the stores they need.
    let database: any PaywardenDatabase
    public let keyring: VaultKeyring
    public let policy: VaultPolicy
    let sealer: EnvelopeSealer
    let clock: @Sendable () -> Date
    /// The paypages registrations looked up in the last second (``PaypageCache``).
    let paypageCache = PaypageCache()

    public init(
        database: any PaywardenDatabase, keyring: VaultKeyring, policy: VaultPolicy = VaultPolicy(),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.database = database
        self.keyring = keyring
        self.policy = policy
        self.sealer = EnvelopeSealer(hsm: keyring.hsm)
        self.clock = clock
    }

    public var now: Date { clock() }

    // MARK: Keyed hashes, computed in the HSM

    /// The fingerprint of an account number in an organisation: static per account number and
    /// organisation, and useless without the HMAC key (PCI DSS 4.0.1 §3.5.1.1). The account
    /// number alone: the same card with a new expiry is the same account.
    func fingerprint(_ accountNumber: String, organization: OrganizationID, key: VaultKey) async throws(VaultError) -> [UInt8] {
        try await hmac(key, Self.domain("fingerprint", organization.rawValue, accountNumber))
    }

    /// The look-up key of a registration ID: the table holds no ID anyone could redeem.
    func lookupKey(_ id: some StringProtocol, key: VaultKey) async throws(VaultError) -> [UInt8] {
        try await hmac(key, Self.domain("registration", String(id)))
    }

    private func hmac(_ key: VaultKey, _ data: [UInt8]) async throws(VaultError) -> [UInt8] {
        do {
            return try await keyring.hsm.hmacSHA256(key.id, data: data)
        } catch {
            throw .hsm(error, "the HSM could not compute a keyed hash with key \(key.id.hex)")
        }
    }

    /// Length-prefixed fields after a label, so no two inputs of different purposes collide.
    static func domain(_ label: String, _ fields: String...) -> [UInt8] {
        var bytes = Array("paywarden \(label) v1".utf8)
        for field in fields {
            let utf8 = Array(field.utf8)
            bytes += [UInt8(truncatingIfNeeded: utf8.count >> 8), UInt8(truncatingIfNeeded: utf8.count)] + utf8
        }
        return bytes
    }

    /// The vault key of `purpose` with `id`, re-reading the HSM once when it is not known yet (another
    /// instance rotated).
    func key(_ purpose: VaultKeyPurpose, id: String) async throws(VaultError) -> VaultKey {
        if let key = keyring.key(purpose, id: id) { return key }
        try await keyring.refresh()
        guard let key = keyring.key(purpose, id: id) else {
            throw VaultError(.recordUnreadable, "a record is sealed under \(purpose.rawValue) key \(id), which the HSM no longer has")
        }
        return key
    }

    /// Fails, for good, on an HSM that lacks part of what the vault needs: checked before every
    /// vault operation, so that each is refused alike whatever the records hold.
    public func requireCapabilities() throws(VaultError) {
        try keyring.requireCapabilities()
    }

    /// Fails unless every vault key is there: checked before a token is decrypted, so a vault that
    /// cannot store it does not claim (and so burn) the token's transaction id.
    public func requireKeys() throws(VaultError) {
        for purpose in VaultKeyPurpose.allCases { _ = try keyring.current(purpose) }
    }

    /// Runs a store call, turning its failures into the vault's.
    func storage<Value>(_ body: () async throws(StorageError) -> Value) async throws(VaultError) -> Value {
        do {
            return try await body()
        } catch {
            switch error.category {
            case .unavailable: throw VaultError(.databaseUnavailable, "the database is unavailable; retry shortly")
            case .conflict: throw VaultError(.invalidRequest, error.message)
            case .corrupt, .schema: throw VaultError(.recordUnreadable, "the database answered unexpectedly: \(error.message)")
            }
        }
    }
}

/// The vault's times.
public struct VaultPolicy: Sendable {
    /// How long a registration ID can be redeemed: 24 hours, as eProtect's.
    public var registrationLifetime: TimeInterval
    /// How long an ended registration's tombstone is kept, so it answers 878 rather than 877.
    public var tombstoneRetention: TimeInterval
    /// How long a rotated-out key is kept after its successor became current, beyond the point
    /// nothing uses it: every instance re-reads the keys within this time, so none seals under it.
    public var retiredKeyGrace: TimeInterval
    /// How long a token unlinked by Apple's event is kept (detokenizing it answers
    /// `token_unlinked`, not `token_not_found`) before the purge destroys it: 30 days.
    public var unlinkedTokenRetention: TimeInterval
    /// How old the keyring may be when a registration is sealed: the service's maintenance
    /// interval, the longest any instance goes without re-reading the keys.
    public var keyRefreshInterval: TimeInterval

    public init(
        registrationLifetime: TimeInterval = 86_400, tombstoneRetention: TimeInterval = 7 * 86_400, retiredKeyGrace: TimeInterval = 60,
        unlinkedTokenRetention: TimeInterval = 30 * 86_400, keyRefreshInterval: TimeInterval = 30
    ) {
        self.registrationLifetime = registrationLifetime
        self.tombstoneRetention = tombstoneRetention
        self.retiredKeyGrace = retiredKeyGrace
        self.unlinkedTokenRetention = unlinkedTokenRetention
        self.keyRefreshInterval = keyRefreshInterval
    }
}
