import Foundation

/// What Paywarden knows of one merchant key: its record (purpose, merchant, state, dates, as key
/// custody encodes it) and the certificate Apple issued for it. The key itself never leaves the
/// HSM; this row holds nothing secret, and every instance sharing the HSM and the database reads
/// the same one.
public struct StoredKeyRecord: Sendable, Hashable {
    /// The key's `CKA_ID`, lowercase hex.
    public var keyID: String
    /// Key custody's encoding of the record.
    public var record: [UInt8]
    /// The certificate's DER, once one is imported.
    public var certificate: [UInt8]?
    /// 1 when inserted, one more at every update: the compare-and-set that keeps two admins (or
    /// instances) from overwriting each other's change.
    public var revision: Int
    public var updatedAt: Date

    public init(keyID: String, record: [UInt8], certificate: [UInt8]?, revision: Int, updatedAt: Date) {
        self.keyID = keyID
        self.record = record
        self.certificate = certificate
        self.revision = revision
        self.updatedAt = updatedAt
    }
}
