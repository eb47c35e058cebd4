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
        var outcome = "ok"
        var detail: String?
        var audit: AuditLog?
        defer {
            let record = AuditLog.Record(
                time: Date(), user: AuditLog.currentUser, action: action.name, keyID: action.keyID,
                merchantID: action.merchantID, result: outcome, detail: detail
            )
            do {
                try audit?.append(record)
            } catch {
                FileHandle.standardError.write(Data("paywarden: warning: the audit log could not be written: \(error)\n".utf8))
            }
        }
        do {
            let settings = try await PaywardenSettings.load()
            CommandLogging.bootstrap(settings, defaultLevel: .warning)
            action.home = PaywardenHome(settings)
            action.settings = settings
            audit = PaywardenHome.auditTrail(settings)
            let lock = mutates ? try AdminLock(path: action.home.adminLock) : nil
            let hsm = try await HSM.open(options.configuration(settings), probeCapabilities: probeCapabilities)
            do {
                detail = try await body(hsm, &action)
                await hsm.close()
            } catch {
                await hsm.close()
                throw error
            }
            withExtendedLifetime(lock) {}
        } catch {
            let failure = CommandFailure(describing: error)
            outcome = failure.status == .refused ? "refused" : "failed"
            detail = [action.progress, failure.message].compactMap { $0 }.joined(separator: "; ")
            failure.report()
            throw failure.exitCode
        }
    }
}
