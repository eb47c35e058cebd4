import Foundation
import PKCS11

/// A merchant key as an admin sees it: the HSM key, Paywarden's record of it and, once
/// imported, its certificate.
public struct MerchantKey: Sendable, Hashable {
    public let key: KeyObject
    public let record: KeyRecord
    public let certificate: MerchantCertificate?
    /// Base64 SHA-256 of the DER SubjectPublicKeyInfo: the `header.publicKeyHash` of tokens
    /// encrypted to this key.
    public let publicKeyHash: String

    public var id: KeyIdentifier { key.id }
    public var state: KeyState { record.state }
    public var purpose: KeyPurpose { record.purpose }
    public var merchantID: String? { record.merchantID ?? certificate?.merchantID }

    /// SHA-256 of the merchant identifier, from the certificate's extension when there is one.
    public var merchantIdentifierHash: String? { certificate?.merchantIdentifierHash ?? record.merchantIdentifierHash }

    /// Whole days until the certificate expires (negative once expired).
    public func daysLeft(at now: Date) -> Int? {
        guard let notAfter = certificate?.notValidAfter else { return nil }
        return Int((notAfter.timeIntervalSince(now) / 86_400).rounded(.down))
    }

    /// Warnings an admin should see: Apple's 30/15/7-day expiry reminders, and pending keys
    /// that have waited more than 7 days for their certificate.
    public func warnings(at now: Date) -> [String] {
        var warnings: [String] = []
        if let days = daysLeft(at: now), state != .retired {
            if days < 0 {
                warnings.append("certificate expired \(-days) days ago")
            } else if let threshold = [7, 15, 30].first(where: { days <= $0 }) {
                warnings.append("certificate expires within \(threshold) days (\(days) left): rotate now")
            }
        }
        if state == .pending, now.timeIntervalSince(record.createdAt) > 7 * 86_400 {
            let days = Int(now.timeIntervalSince(record.createdAt) / 86_400)
            let issuer = purpose == .upstream ? "the processor's" : "Apple's"
            warnings.append("pending for \(days) days: import \(issuer) certificate or destroy the key")
        }
        return warnings
    }
}
