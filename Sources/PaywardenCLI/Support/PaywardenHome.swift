import Foundation

/// The Paywarden home: `PAYWARDEN_HOME`, default `./Keys`. Holds the development token, the
/// CSRs and certificates an admin works with, the admin lock and the audit log.
enum PaywardenHome {
    static var path: String {
        let configured = ProcessInfo.processInfo.environment["PAYWARDEN_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "Keys"
        return URL(fileURLWithPath: configured).standardizedFileURL.path
    }

    static var auditLog: String { path + "/audit/audit.jsonl" }
    static var adminLock: String { path + "/.admin.lock" }
}
