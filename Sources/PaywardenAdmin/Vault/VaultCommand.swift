import ArgumentParser
import Foundation
import PKCS11
import PaywardenConfiguration
import Vault

public struct VaultCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "vault",
        abstract: "The vault's keys in the HSM and the registrations and tokens they protect.",
        discussion: """
            One key-encrypting key each for registrations and tokens, and one HMAC key for fingerprints and \
            registration look-ups. The running service's maintenance (\(SettingCatalog.vaultMaintenanceSeconds.environmentName)) \
            purges expired registrations, moves rows off rotated-out keys and destroys each one nothing uses.
            """,
        subcommands: [VaultStatusCommand.self, VaultPurge.self, VaultRotateKey.self]
    )
}

/// `vault status` as printed (`--json` uses the same fields).
struct VaultStatusView: Encodable {
    struct Key: Encodable {
        let id: String
        let kind: String
        let createdAt: Date
        /// `current` or `rotated-out`.
        let state: String
        let rows: Int
        /// For a rotated-out fingerprint key: the registrations made before its successor, whose look-ups need it.
        let registrationsBeforeSuccessor: Int?
    }

    struct Purpose: Encodable {
        let purpose: String
        /// Rows still under rotated-out keys.
        let pending: Int
        let keys: [Key]
    }

    let purposes: [Purpose]
    /// What this HSM lacks of what the vault needs (no key can be made here); empty where it can run.
    let vaultGaps: [String]

    init(_ status: VaultStatus, gaps: [CapabilityGap]) {
        vaultGaps = gaps.map(\.description)
        purposes = status.purposes.map { purpose in
            Purpose(
                purpose: purpose.purpose, pending: purpose.pending,
                keys: purpose.keys.map {
                    Key(
                        id: $0.id, kind: $0.kind, createdAt: $0.createdAt, state: $0.current ? "current" : "rotated-out", rows: $0.rows,
                        registrationsBeforeSuccessor: $0.registrationsHashed)
                })
        }
    }

    var lines: [String] {
        vaultGaps.map { "the vault cannot run on this HSM: \($0)" }
            + purposes.flatMap { purpose -> [String] in
                guard !purpose.keys.isEmpty else {
                    guard vaultGaps.isEmpty else { return ["\(purpose.purpose): no key"] }
                    return ["\(purpose.purpose): no key; `paywarden vault rotate-key --purpose \(purpose.purpose)` creates it"]
                }
                let pending = purpose.pending == 0 ? "nothing pending" : "\(purpose.pending) rows pending on rotated-out keys"
                return ["\(purpose.purpose): \(pending)"]
                    + purpose.keys.map { key in
                        var line = "  \(key.id)  \(key.kind)  created \(ISO8601DateFormatter().string(from: key.createdAt))  \(key.state)  "
                        line += "\(key.rows) rows"
                        if let waiting = key.registrationsBeforeSuccessor { line += ", \(waiting) registrations made before its successor" }
                        return line
                    }
            }
    }
}

extension VaultStatus {
    /// The status of `purpose`.
    func of(_ purpose: VaultKeyPurpose) -> Purpose? {
        purposes.first { $0.purpose == purpose.rawValue }
    }
}

struct VaultStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Each purpose's keys (current or rotated-out), the rows each protects, and the rows still to move."
    )

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await VaultAdmin("vault.status", mutates: false).run(hsm: hsmOptions) { vault, _, audit in
            let view = VaultStatusView(try await vault.status(), gaps: vault.keyring.capabilityGaps)
            audit.note(view.purposes.map { "\($0.purpose) \($0.keys.count) keys, \($0.pending) rows pending" }.joined(separator: ", "))
            if output.json {
                try printJSON(view)
            } else {
                for line in view.lines { print(line) }
            }
        }
    }
}

struct VaultPurge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Destroy the payloads of expired registrations and delete tombstones past their retention.",
        discussion: "The running service does this on its own; this is for a vault no service runs against."
    )

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await VaultAdmin("vault.purge").run(hsm: hsmOptions) { vault, _, audit in
            let purge = try await vault.purgeRegistrations()
            audit.note("\(purge.payloadsDestroyed) payloads destroyed, \(purge.tombstonesDeleted) tombstones deleted")
            if output.json {
                try printJSON(["payloadsDestroyed": purge.payloadsDestroyed, "tombstonesDeleted": purge.tombstonesDeleted])
            } else {
                print(
                    "purged expired registrations: \(purge.payloadsDestroyed) payloads destroyed, "
                        + "\(purge.tombstonesDeleted) tombstones deleted")
            }
        }
    }
}

struct VaultRotateKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-key",
        abstract: "Make a new current key for a purpose, move the rows onto it, and destroy the older key.",
        discussion: """
            The new key is current at once. Data keys are re-wrapped, never the data re-encrypted; fingerprints are \
            recomputed. The older key is destroyed \(SettingCatalog.vaultRetiredKeyGraceSeconds.environmentName) after the \
            new key's creation, once nothing uses it; an older fingerprint key also waits for the registrations made \
            before the new key to be purged, which the running service sees to. With --no-wait the running service \
            does all of it.
            """
    )

    @Option(help: "registrations, tokens or fingerprint.")
    var purpose: String

    @Flag(name: .customLong("no-wait"), help: "Only create the key; leave the rest to the running service.")
    var noWait = false

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func validate() throws {
        guard VaultKeyPurpose(rawValue: purpose) != nil else {
            throw ValidationError("--purpose takes \(VaultKeyPurpose.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    struct Report: Encodable {
        let purpose: String
        let key: VaultKeyView
        let rowsMoved: Int
        let pending: Int
        let destroyed: [VaultKeyView]
        /// Rotated-out keys of the purpose the running service destroys later.
        let remaining: [VaultKeyView]
    }

    func run() async throws {
        try await VaultAdmin("vault.rotate-key").run(hsm: hsmOptions) { vault, settings, audit in
            guard let purpose = VaultKeyPurpose(rawValue: purpose) else { throw ValidationError("--purpose is checked by validate()") }
            let rotation = Rotation(vault: vault, purpose: purpose, settings: settings, audit: audit, quiet: output.json)
            let report = try await rotation.run(wait: !noWait)
            if output.json { try printJSON(report) }
        }
    }

    /// One rotation, printing its progress unless `quiet` (`--json` prints only the report).
    struct Rotation {
        let vault: CardVault
        let purpose: VaultKeyPurpose
        let settings: PaywardenSettings
        let audit: VaultAudit
        let quiet: Bool

        func say(_ line: String) {
            if !quiet { print(line) }
        }

        func run(wait: Bool) async throws -> Report {
            let key = try await vault.keyring.create(purpose)
            audit.concerns(key)
            audit.note("new current \(key.summary)")
            say("new current \(key.summary): new \(purpose.rawValue) records use it from now on")
            var moved = 0
            var destroyed: [VaultKey] = []
            var status = try await vault.status()
            if !wait {
                if status.of(purpose)?.keys.count ?? 0 > 1 {
                    say(
                        "the running service's maintenance (every \(settings.server.vaultMaintenanceSeconds)s, "
                            + "\(SettingCatalog.vaultMaintenanceSeconds.key)) moves the rows onto it and destroys each older key once "
                            + "nothing uses it; `paywarden vault status` shows how far it has come")
                    audit.note("rows and older keys left to the service's maintenance")
                }
                return report(key, moved: moved, destroyed: destroyed, status: status)
            }

            // Until nothing of the purpose is under an older key; a step that moves nothing while
            // rows remain (a conflict, a row that does not open) would never finish, so it ends the loop.
            var pending = status.of(purpose)?.pending ?? 0
            if pending > 0 { say("moving \(pending) rows onto it") }
            var stalled = false
            while true {
                let step = try await vault.rotationStep()
                moved += step.moved
                destroyed += step.destroyed
                for old in step.destroyed { say("destroyed \(old.summary): nothing uses it any more") }
                status = try await vault.status()
                let left = status.of(purpose)?.pending ?? 0
                say("\(purpose.rawValue): \(moved) rows moved, \(left) still under older keys")
                if left == 0 { break }
                if step.moved == 0, left >= pending {
                    stalled = true
                    say(
                        "\(left) rows did not move (`paywarden vault status` shows them); the running service's maintenance "
                            + "retries them")
                    break
                }
                pending = left
            }
            audit.note("\(moved) rows moved")

            let older = status.of(purpose)?.keys.filter { !$0.current } ?? []
            // An older HMAC key still finds the registrations it hashed: it goes when they are
            // purged, days from now, so this command does not wait for it.
            let lookups = older.filter { ($0.registrationsHashed ?? 0) > 0 }
            for old in lookups {
                say(
                    "\(purpose.rawValue) key \(old.id) still finds the \(old.registrationsHashed ?? 0) registrations hashed with it: "
                        + "the running service destroys it once they and their tombstones are purged")
            }
            if !stalled, older.count > lookups.count {
                let grace = vault.policy.retiredKeyGrace - vault.now.timeIntervalSince(key.createdAt)
                if grace > 0 {
                    say(
                        "waiting \(Int(grace.rounded(.up)))s (\(SettingCatalog.vaultRetiredKeyGraceSeconds.key)) before destroying the "
                            + "older key: every running instance re-reads the keys within that time, so none seals under it any more")
                    try await Task.sleep(for: .seconds(grace))
                }
                let step = try await vault.rotationStep()
                moved += step.moved
                destroyed += step.destroyed
                for old in step.destroyed { say("destroyed \(old.summary): nothing uses it any more") }
                status = try await vault.status()
            }
            if !destroyed.isEmpty { audit.note("keys destroyed: " + destroyed.map(\.summary).joined(separator: ", ")) }
            let report = report(key, moved: moved, destroyed: destroyed, status: status)
            if !report.remaining.isEmpty {
                let ids = report.remaining.map(\.id).joined(separator: ", ")
                audit.note("older keys left to the service's maintenance: \(ids)")
                if lookups.isEmpty && !stalled {
                    say(
                        "older \(purpose.rawValue) keys remain (\(ids)): the running service's maintenance destroys each once "
                            + "nothing uses it")
                }
            }
            return report
        }

        private func report(_ key: VaultKey, moved: Int, destroyed: [VaultKey], status: VaultStatus) -> Report {
            let remaining = vault.keyring.keys(purpose).filter { $0.id != key.id }
            return Report(
                purpose: purpose.rawValue, key: VaultKeyView(key), rowsMoved: moved, pending: status.of(purpose)?.pending ?? 0,
                destroyed: destroyed.map(VaultKeyView.init), remaining: remaining.map(VaultKeyView.init))
        }
    }
}
