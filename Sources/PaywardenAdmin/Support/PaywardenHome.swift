import Foundation
import KeyCustody
import PKCS11
import PaywardenConfiguration

/// The Paywarden home (`PAYWARDEN_HOME`, default `./Keys`): the development token, the CSRs and
/// certificates an admin works with, the admin lock and the audit log.
struct PaywardenHome {
    let path: String

    init(_ settings: PaywardenSettings) {
        path = settings.home
    }

    init(path: String) {
        self.path = path
    }

    var auditLog: String { path + "/audit/audit.jsonl" }
    var adminLock: String { path + "/.admin.lock" }

    /// The audit trail admin commands write to: ``auditLog``, each line shipped to syslog too when
    /// `PAYWARDEN_AUDIT_SYSLOG` is set (a line not shipped is a warning; the file still has it).
    static func auditTrail(_ settings: PaywardenSettings) -> AuditLog {
        AuditLog(
            path: PaywardenHome(settings).auditLog,
            syslog: settings.auditSyslog.map {
                AuditSyslog(destination: $0) { reason in FileHandle.standardError.write(Data("paywarden: warning: \(reason)\n".utf8)) }
            })
    }

    /// `log` sealed into a chain of this command's own under the HSM's audit keys (made there on
    /// first use). When they can be neither found nor made the line is written unsealed, with a
    /// warning: the record of what an admin did matters more than its seal.
    static func sealed(_ log: AuditLog, hsm: HSM) async -> AuditLog {
        do {
            return log.sealed(
                by: try await AuditChain.open(hsm) { reason in
                    FileHandle.standardError.write(Data("paywarden: warning: the audit line is written unsealed: \(reason)\n".utf8))
                })
        } catch {
            FileHandle.standardError.write(Data("paywarden: warning: the audit line is written unsealed: \(error.message)\n".utf8))
            return log
        }
    }

    /// The final checkpoint of the command's chain (nothing when it wrote no sealed line).
    static func close(_ log: AuditLog) async {
        do {
            try await log.checkpoint(final: true)
        } catch {
            FileHandle.standardError.write(
                Data("paywarden: warning: the audit chain's final checkpoint could not be written: \(error)\n".utf8))
        }
    }
}
