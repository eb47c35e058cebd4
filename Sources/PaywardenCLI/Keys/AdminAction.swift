import Foundation
import KeyCustody
import PKCS11

/// Runs one admin action: under the admin lock when it changes keys, against a freshly opened
/// HSM, with exactly one audit record for its outcome, whatever it is.
struct AdminAction {
    let name: String
    var keyID: String?
    var merchantID: String?
    let mutates: Bool

    init(_ name: String, keyID: String? = nil, merchantID: String? = nil, mutates: Bool = true) {
        self.name = name
        self.keyID = keyID
        self.merchantID = merchantID
        self.mutates = mutates
    }

    /// `body` returns what to audit on success (it may name the key it created).
    func run(hsm options: HSMOptions, _ body: (MerchantKeyStore, inout AdminAction) async throws -> String?) async throws {
        CommandLogging.bootstrap()
        var action = self
        var outcome = "ok"
        var detail: String?
        defer {
            let record = AuditLog.Record(
                time: Date(), user: AuditLog.currentUser, action: action.name, keyID: action.keyID,
                merchantID: action.merchantID, result: outcome, detail: detail
            )
            do {
                try AuditLog(path: PaywardenHome.auditLog).append(record)
            } catch {
                FileHandle.standardError.write(Data("paywarden: warning: the audit log could not be written: \(error)\n".utf8))
            }
        }
        do {
            let lock = mutates ? try AdminLock(path: PaywardenHome.adminLock) : nil
            let hsm = try await HSM.open(options.configuration(), probeCapabilities: false)
            do {
                detail = try await body(MerchantKeyStore(hsm: hsm), &action)
                await hsm.close()
            } catch {
                await hsm.close()
                throw error
            }
            withExtendedLifetime(lock) {}
        } catch {
            let failure = CommandFailure(describing: error)
            outcome = failure.status == .refused ? "refused" : "failed"
            detail = failure.message
            FileHandle.standardError.write(Data("paywarden: \(failure.message)\n".utf8))
            throw failure.exitCode
        }
    }
}
