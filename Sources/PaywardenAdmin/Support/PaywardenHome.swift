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
}
