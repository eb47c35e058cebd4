import Foundation
import PKCS11
import Synchronization

/// The vault's keys in the HSM, by purpose, newest (current) first. Read from the HSM's labels at
/// start and on ``refresh()``; the service refreshes periodically so a rotation made by the CLI or
/// another instance is picked up.
public final class VaultKeyring: Sendable {
    public let hsm: HSM
    private let keys = Mutex<[VaultKeyPurpose: [VaultKey]]>([:])
    private let lastRefresh = Mutex<ContinuousClock.Instant?>(nil)

    /// What this HSM lacks of what the vault needs, fixed by its capability probe; empty where the
    /// vault can run.
    public let capabilityGaps: [CapabilityGap]

    public init(hsm: HSM) {
        self.hsm = hsm
        self.capabilityGaps = hsm.dataProtectionGaps
    }

    /// Fails, for good, on an HSM that lacks part of what the vault needs.
    public func requireCapabilities() throws(VaultError) {
        guard capabilityGaps.isEmpty else { throw .capabilityMissing(capabilityGaps) }
    }

    /// Re-reads the vault keys from the HSM.
    public func refresh() async throws(VaultError) {
        let objects: [SecretKeyObject]
        do {
            objects = try await hsm.secretKeys()
        } catch {
            throw VaultError(.hsmUnavailable, "the vault keys could not be listed: \(error)")
        }
        var byPurpose: [VaultKeyPurpose: [VaultKey]] = [:]
        for key in objects.compactMap(VaultKey.init) { byPurpose[key.purpose, default: []].append(key) }
        for purpose in byPurpose.keys { byPurpose[purpose]?.sort(by: VaultKey.newestFirst) }
        keys.withLock { $0 = byPurpose }
        lastRefresh.withLock { $0 = .now }
    }

    /// Re-reads the keys when the last read is older than `age`: a look-up that missed may have
    /// missed because another instance or the CLI rotated a key since.
    public func refreshIfOlder(than age: Duration) async throws(VaultError) {
        guard lastRefresh.withLock({ $0.map { ContinuousClock.now - $0 > age } ?? true }) else { return }
        try await refresh()
    }

    /// Every key of `purpose`, newest first.
    public func keys(_ purpose: VaultKeyPurpose) -> [VaultKey] {
        keys.withLock { $0[purpose] ?? [] }
    }

    /// The key new records of `purpose` use.
    public func current(_ purpose: VaultKeyPurpose) throws(VaultError) -> VaultKey {
        guard let key = keys(purpose).first else {
            try requireCapabilities()
            throw VaultError(
                .hsmUnavailable, "the HSM has no \(purpose.rawValue) vault key; an admin creates it with paywarden vault rotate-key")
        }
        return key
    }

    /// The key `id` of `purpose` if the HSM still has it.
    public func key(_ purpose: VaultKeyPurpose, id: String) -> VaultKey? {
        keys(purpose).first { $0.id.hex == id }
    }

    /// Generates a new key for `purpose` in the HSM; it becomes current.
    @discardableResult
    public func create(_ purpose: VaultKeyPurpose, now: Date = Date()) async throws(VaultError) -> VaultKey {
        try requireCapabilities()
        guard let kind = purpose.kind(on: hsm) else {
            throw VaultError(.hsmUnavailable, "the token's capabilities were not probed, so no vault key can be made")
        }
        // Strictly newer than the current key, whatever the clocks of the instances that made them.
        let created = max(now, keys(purpose).first.map { $0.createdAt.addingTimeInterval(0.001) } ?? now)
        let specification = SecretKeySpecification(label: VaultKey.label(purpose, createdAt: created), kind: kind)
        do {
            _ = try await hsm.generateSecretKey(specification)
        } catch {
            throw .hsm(error, "the \(purpose.rawValue) vault key could not be generated")
        }
        let key = VaultKey(id: specification.id, purpose: purpose, createdAt: created, kind: kind)
        keys.withLock { $0[purpose, default: []].insert(key, at: 0) }
        return key
    }

    /// Creates the first key of every purpose that has none; returns those created. On an HSM that
    /// lacks part of what the vault needs it refuses, whatever keys it holds: the vault cannot run there.
    public func createMissing(now: Date = Date()) async throws(VaultError) -> [VaultKey] {
        try requireCapabilities()
        try await refresh()
        var created: [VaultKey] = []
        for purpose in VaultKeyPurpose.allCases where keys(purpose).isEmpty {
            created.append(try await create(purpose, now: now))
        }
        return created
    }

    /// Destroys `key` in the HSM. The caller has checked nothing uses it.
    public func destroy(_ key: VaultKey) async throws(VaultError) {
        do {
            try await hsm.destroySecretKey(key.id)
        } catch {
            throw VaultError(.hsmUnavailable, "the \(key.purpose.rawValue) vault key \(key.id.hex) could not be destroyed: \(error)")
        }
        keys.withLock { $0[key.purpose]?.removeAll { $0.id == key.id } }
    }
}
