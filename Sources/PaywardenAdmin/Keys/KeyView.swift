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
    /// The processor upstreams this key is presented to, as the service last recorded it.
    let inUse: [InUse]
    let warnings: [String]

    struct InUse: Encodable {
        let upstream: String
        let since: Date
    }

    init(_ key: MerchantKey, now: Date, inUse: [UpstreamKeyInUse] = []) {
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
        self.inUse = inUse.filter { $0.keyID == key.id }.map { InUse(upstream: $0.upstream, since: $0.since) }
        warnings = key.warnings(at: now)
    }

    /// One line per key for people; warnings follow on their own lines.
    var line: String {
        let expiry = notAfter.map { "expires \(ISO8601DateFormatter().string(from: $0)) (\(daysLeft ?? 0) days)" } ?? "no certificate"
        return
            "\(id)  \(purpose)  \(type)  \(merchantId ?? merchantIdentifierHash ?? "?")  \(state)  publicKeyHash=\(publicKeyHash)  "
            + "\(expiry)"
            + inUse.map { "  in use by the \($0.upstream) upstream since \(ISO8601DateFormatter().string(from: $0.since))" }.joined()
    }
}
