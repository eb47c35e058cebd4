import Foundation
import PaywardenConfiguration
import PaywardenStorage
import Synchronization
import Vault

/// Runs one vault command as an ``AdminAction`` (the admin lock when it mutates, one audit record
/// whatever the outcome, failures reported) with a ``CardVault`` over the HSM and the database.
struct VaultAdmin {
    let name: String
    let mutates: Bool

    init(_ name: String, mutates: Bool = true) {
        self.name = name
        self.mutates = mutates
    }

    /// `body` notes what to audit on `audit` as it goes, so a failure part-way still records what
    /// changed before it.
    func run(
        hsm options: HSMOptions,
        _ body: @Sendable (_ vault: CardVault, _ settings: PaywardenSettings, _ audit: VaultAudit) async throws -> Void
    ) async throws {
        try await run(hsm: options) { vault, settings, audit, _ in try await body(vault, settings, audit) }
    }

    /// The same, with the database for commands that also read merchant-key records or events.
    func run(
        hsm options: HSMOptions,
        _ body:
            @Sendable (_ vault: CardVault, _ settings: PaywardenSettings, _ audit: VaultAudit, _ database: any PaywardenDatabase)
            async throws -> Void
    ) async throws {
        let audit = VaultAudit()
        // Vault keys are generated as the token allows (key wrap or AES-GCM): only the probe says which.
        try await AdminAction(name, mutates: mutates).run(hsm: options, probeCapabilities: true) { hsm, action in
            defer {
                action.keyID = audit.keyID
                action.progress = audit.detail
            }
            guard let settings = action.settings else { preconditionFailure("AdminAction reads the settings before its body") }
            let policy = VaultPolicy(
                retiredKeyGrace: TimeInterval(settings.server.vaultRetiredKeyGraceSeconds),
                keyRefreshInterval: TimeInterval(settings.server.vaultMaintenanceSeconds))
            try await AdminDatabase.with(settings) { connection in
                let keyring = VaultKeyring(hsm: hsm)
                try await keyring.refresh()
                try await body(
                    CardVault(database: connection.database, keyring: keyring, policy: policy), settings, audit, connection.database)
            }
            return audit.detail
        }
    }
}

/// What a vault command's audit record says besides its outcome: the vault key it concerns and
/// notes without secrets (paypage ids, organisations, key ids, counts).
final class VaultAudit: Sendable {
    private let state = Mutex<(keyID: String?, notes: [String])>((nil, []))

    func note(_ text: String) {
        state.withLock { $0.notes.append(text) }
    }

    /// The record's key id: the key the command made.
    func concerns(_ key: VaultKey) {
        state.withLock { $0.keyID = key.id.hex }
    }

    var keyID: String? { state.withLock { $0.keyID } }

    var detail: String? {
        state.withLock { $0.notes.isEmpty ? nil : $0.notes.joined(separator: "; ") }
    }
}

/// A vault key as the CLI names it.
extension VaultKey {
    var summary: String { "\(purpose.rawValue) key \(id.hex) (\(kind.rawValue))" }
}
