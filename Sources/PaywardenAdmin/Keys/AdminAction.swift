import Foundation
import KeyCustody
import PKCS11
import PaywardenConfiguration
import PaywardenServices

/// Runs one admin action: under the admin lock when it changes keys, against a freshly opened
/// HSM, with exactly one audit record for its outcome, whatever it is.
struct AdminAction {
    let name: String
    var keyID: String?
    var merchantID: String?
    let mutates: Bool
    /// The Paywarden home of this run, once the settings are read.
    private(set) var home = PaywardenHome(path: "Keys")
    /// The settings of this run, once read.
    private(set) var settings: PaywardenSettings?
    /// What the action had done when it failed (keys it created, say): the audit record keeps it
    /// before the failure's message, so a failure part-way does not hide what changed.
    var progress: String?

    init(_ name: String, keyID: String? = nil, merchantID: String? = nil, mutates: Bool = true) {
        self.name = name
        self.keyID = keyID
        self.merchantID = merchantID
        self.mutates = mutates
    }

    /// The audit record names `key` and its merchant.
    mutating func concerns(_ key: MerchantKey) {
        keyID = key.id.hex
        merchantID = key.merchantID ?? merchantID
    }

    /// `body` returns what to audit on success (it may name the key it created).
    func run(hsm options: HSMOptions, _ body: (MerchantKeyStore, inout AdminAction) async throws -> String?) async throws {
        try await run(hsm: options, probeCapabilities: false) { hsm, action in
            guard let settings = action.settings else { preconditionFailure("AdminAction reads the settings before its body") }
            let issuers = try CertificateIssuers.configured(settings.verification.certificateIssuers)
            return try await AdminDatabase.with(settings) { connection in
                try await body(MerchantKeyStore(hsm: hsm, records: connection.keyRecords, certificateIssuers: issuers), &action)
            }
        }
    }

    /// The same with the HSM itself, its capabilities probed when `probeCapabilities` (what
    /// generating vault keys needs; merchant keys do without the probe's cost).
    func run(hsm options: HSMOptions, probeCapabilities: Bool, _ body: (HSM, inout AdminAction) async throws -> String?) async throws {
        var action = self
        var audit: AuditLog?
        var hsm: HSM?
        let outcome: String
        var detail: String?
        var failure: CommandFailure?
        do {
            let settings = try await PaywardenSettings.load()
            CommandLogging.bootstrap(settings, defaultLevel: .warning)
            action.home = PaywardenHome(settings)
            action.settings = settings
            let trail = PaywardenHome.auditTrail(settings)
            audit = trail
            let lock = mutates ? try AdminLock(path: action.home.adminLock) : nil
            let opened = try await HSM.open(options.configuration(settings), probeCapabilities: probeCapabilities)
            hsm = opened
            audit = await PaywardenHome.sealed(trail, hsm: opened)
            detail = try await body(opened, &action)
            outcome = "ok"
            withExtendedLifetime(lock) {}
        } catch {
            let described = CommandFailure(describing: error)
            outcome = described.status == .refused ? "refused" : "failed"
            detail = [action.progress, described.message].compactMap { $0 }.joined(separator: "; ")
            failure = described
        }
        // The record and the chain's final checkpoint before the HSM closes: both are sealed in it.
        if let audit {
            let record = AuditLog.Record(
                time: Date(), user: AuditLog.currentUser, action: action.name, keyID: action.keyID,
                merchantID: action.merchantID, result: outcome, detail: detail
            )
            do {
                try await audit.append(record)
            } catch {
                FileHandle.standardError.write(Data("paywarden: warning: the audit log could not be written: \(error)\n".utf8))
            }
            await PaywardenHome.close(audit)
        }
        await hsm?.close()
        if let failure {
            failure.report()
            throw failure.exitCode
        }
    }
}
