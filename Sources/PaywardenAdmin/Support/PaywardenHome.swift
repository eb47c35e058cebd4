import Foundation
import KeyCustody
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
}
