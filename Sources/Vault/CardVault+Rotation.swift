import Foundation
import PaywardenStorage

/// Key rotation: a new key becomes current at once; a job moves what older keys protect onto it
/// (data keys re-wrapped, never the data re-encrypted; fingerprints recomputed), and an older key
/// is destroyed once nothing uses it.
extension CardVault {
    /// One step of the re-wrap job for every purpose: at most `batch` rows each. Returns what
    /// moved and which keys were destroyed.
    public func rotationStep(batch: Int = 500) async throws(VaultError) -> RotationStep {
        var step = RotationStep()
        // Nothing rotated out: no table scan (the service asks every few seconds).
        guard VaultKeyPurpose.allCases.contains(where: { keyring.keys($0).count > 1 }) else { return step }
        step.moved += try await rewrapRegistrations(batch: batch)
        step.moved += try await rewrapTokens(batch: batch)
        step.moved += try await refingerprintTokens(batch: batch)
        step.destroyed = try await destroyUnusedKeys()
        return step
    }

    private func rewrapRegistrations(batch: Int) async throws(VaultError) -> Int {
        guard let current = keyring.keys(.registrations).first else { return 0 }
        var moved = 0
        for old in keyring.keys(.registrations).dropFirst() {
            let rows = try await storage { () async throws(StorageError) in
                try await database.registrations(sealedWith: old.id.hex, limit: batch)
            }
            for row in rows {
                guard let sealed = row.sealed,
                    let rewrapped = try await unlessUnreadable({ () async throws(VaultError) in
                        try await sealer.rewrap(sealed, from: old, to: current)
                    })
                else { continue }
                if try await storage({ () async throws(StorageError) in
                    try await database.resealRegistration(lookupKey: row.lookupKey, previousKeyID: old.id.hex, sealed: rewrapped)
                }) {
                    moved += 1
                }
            }
        }
        return moved
    }

    private func rewrapTokens(batch: Int) async throws(VaultError) -> Int {
        guard let current = keyring.keys(.tokens).first else { return 0 }
        var moved = 0
        for old in keyring.keys(.tokens).dropFirst() {
            let rows = try await storage { () async throws(StorageError) in try await database.tokens(sealedWith: old.id.hex, limit: batch)
            }
            for row in rows {
                guard
                    let rewrapped = try await unlessUnreadable({ () async throws(VaultError) in
                        try await sealer.rewrap(row.sealed, from: old, to: current)
                    })
                else { continue }
                if try await storage({ () async throws(StorageError) in
                    try await database.resealToken(row.token, organization: row.organization, previousKeyID: old.id.hex, sealed: rewrapped)
                }) {
                    moved += 1
                }
            }
        }
        return moved
    }

    /// Fingerprints cannot be re-wrapped: each token's account number is opened and hashed anew.
    private func refingerprintTokens(batch: Int) async throws(VaultError) -> Int {
        guard let current = keyring.keys(.fingerprint).first,
            // Until every instance has read the new key, one that has not would miss a moved
            // fingerprint and issue a second token for the account: the grace comes first.
            now.timeIntervalSince(current.createdAt) >= policy.retiredKeyGrace
        else { return 0 }
        var moved = 0
        for old in keyring.keys(.fingerprint).dropFirst() {
            let rows = try await storage { () async throws(StorageError) in
                try await database.tokens(fingerprintedWith: old.id.hex, limit: batch)
            }
            for row in rows {
                let context = SealContext(kind: .token, organization: row.organization, recordID: Array(row.token.utf8))
                guard
                    let contents = try await unlessUnreadable({ () async throws(VaultError) in
                        let key = try await key(.tokens, id: row.sealed.keyID)
                        return try SealedCoding.decode(TokenContents.self, try await sealer.open(row.sealed, with: key, context: context))
                    })
                else { continue }
                let fingerprint = try await fingerprint(contents.accountNumber, organization: row.organization, key: current)
                do {
                    if try await database.refingerprintToken(
                        row.token, organization: row.organization, previousKeyID: old.id.hex, fingerprint: fingerprint,
                        fingerprintKeyID: current.id.hex)
                    {
                        moved += 1
                    }
                } catch  where error.category == .conflict {
                    // A second token for the same account was issued while the rotation ran; both
                    // stay usable, the older one keeps its old fingerprint and the status shows it.
                    continue
                } catch {
                    _ = try await storage { () async throws(StorageError) in throw error }
                }
            }
        }
        return moved
    }

    /// `body`'s value, or nil when the row it works on is unreadable: the row stays where it is
    /// (its key then stays too, and `vault status` counts it), so one bad row never stops the
    /// rotation of every other.
    private func unlessUnreadable<Value>(_ body: () async throws(VaultError) -> Value) async throws(VaultError) -> Value? {
        do {
            return try await body()
        } catch  where error.code == .recordUnreadable {
            return nil
        }
    }

    /// Destroys each rotated-out key nothing uses any more, once every instance has had time to
    /// see its successor (``VaultPolicy/retiredKeyGrace``).
    private func destroyUnusedKeys() async throws(VaultError) -> [VaultKey] {
        let usage = try await storage { () async throws(StorageError) in try await database.keyUsage() }
        var destroyed: [VaultKey] = []
        for purpose in VaultKeyPurpose.allCases {
            let keys = keyring.keys(purpose)
            for (index, old) in keys.enumerated().dropFirst() {
                let successor = keys[index - 1]
                guard now.timeIntervalSince(successor.createdAt) >= policy.retiredKeyGrace,
                    !usage.contains(where: { $0.keyID == old.id.hex && $0.rows > 0 })
                else { continue }
                // Registration look-ups made under an old HMAC key cannot be recomputed: the key
                // stays until the registrations (and tombstones) it hashed are gone, counted by the
                // key each row names (an instance that had not read the successor yet may have
                // hashed some after the successor's creation).
                if purpose == .fingerprint {
                    let waiting = try await storage { () async throws(StorageError) in
                        try await database.registrationCount(lookupKeyID: old.id.hex)
                    }
                    guard waiting == 0 else { continue }
                }
                // Counted again just before: a row sealed since the first count keeps its key.
                let recount = try await storage { () async throws(StorageError) in try await database.keyUsage() }
                guard !recount.contains(where: { $0.keyID == old.id.hex && $0.rows > 0 }) else { continue }
                try await keyring.destroy(old)
                destroyed.append(old)
            }
        }
        return destroyed
    }

    /// Every vault key with the rows it protects: what `vault status` shows, and how far a
    /// rotation has come.
    public func status() async throws(VaultError) -> VaultStatus {
        try await keyring.refresh()
        let usage = try await storage { () async throws(StorageError) in try await database.keyUsage() }
        var purposes: [VaultStatus.Purpose] = []
        for purpose in VaultKeyPurpose.allCases {
            let keys = keyring.keys(purpose)
            var entries: [VaultStatus.Key] = []
            for (index, key) in keys.enumerated() {
                let rows = usage.filter { $0.keyID == key.id.hex }.reduce(0) { $0 + $1.rows }
                var waiting: Int?
                if purpose == .fingerprint, index > 0 {
                    waiting = try await storage { () async throws(StorageError) in
                        try await database.registrationCount(lookupKeyID: key.id.hex)
                    }
                }
                entries.append(
                    VaultStatus.Key(
                        id: key.id.hex, kind: key.kind.rawValue, createdAt: key.createdAt, current: index == 0, rows: rows,
                        registrationsHashed: waiting))
            }
            purposes.append(VaultStatus.Purpose(purpose: purpose.rawValue, keys: entries))
        }
        return VaultStatus(purposes: purposes)
    }
}

/// What one step of the rotation job did.
public struct RotationStep: Sendable {
    public var moved = 0
    public var destroyed: [VaultKey] = []
}

/// The vault's keys and what each still protects.
public struct VaultStatus: Sendable, Codable {
    public struct Key: Sendable, Codable {
        public let id: String
        public let kind: String
        public let createdAt: Date
        public let current: Bool
        /// Rows sealed or fingerprinted under the key.
        public let rows: Int
        /// For a rotated-out HMAC key: registrations whose look-ups it hashed (and those from before
        /// 0005_vault_bindings, which do not say).
        public let registrationsHashed: Int?
    }

    public struct Purpose: Sendable, Codable {
        public let purpose: String
        public let keys: [Key]

        /// Rows still under keys that are not current: the rotation's remaining work.
        public var pending: Int { keys.filter { !$0.current }.reduce(0) { $0 + $1.rows } }
    }

    public let purposes: [Purpose]
}
