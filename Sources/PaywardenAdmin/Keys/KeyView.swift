import Foundation
import KeyCustody

/// A merchant key as the CLI prints it (`--json` uses the same fields).
struct KeyView: Encodable {
    let id: String
    let purpose: String
    let type: String
    let merchantId: String?
    let merchantIdentifierHash: String?
    let state: String
    let publicKeyHash: String
    let createdAt: Date
    let notAfter: Date?
    let daysLeft: Int?
    let predecessor: String?
    let warnings: [String]

    init(_ key: MerchantKey, now: Date) {
        id = key.id.hex
        purpose = key.purpose.rawValue
        type = key.key.algorithm == .ecP256 ? "ec" : "rsa"
        merchantId = key.merchantID
        merchantIdentifierHash = key.merchantIdentifierHash
        state = key.state.rawValue
        publicKeyHash = key.publicKeyHash
        createdAt = key.record.createdAt
        notAfter = key.certificate?.notValidAfter
        daysLeft = key.daysLeft(at: now)
        predecessor = key.record.predecessor
        warnings = key.warnings(at: now)
    }

    /// One line per key for people; warnings follow on their own lines.
    var line: String {
        let expiry = notAfter.map { "expires \(ISO8601DateFormatter().string(from: $0)) (\(daysLeft ?? 0) days)" } ?? "no certificate"
        return
            "\(id)  \(purpose)  \(type)  \(merchantId ?? merchantIdentifierHash ?? "?")  \(state)  publicKeyHash=\(publicKeyHash)  "
            + "\(expiry)"
    }
}
