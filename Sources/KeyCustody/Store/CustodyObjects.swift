import Foundation
import PKCS11

/// How earlier builds kept key records and certificates in the token, beside the keys; read
/// only to move them to the database (``MerchantKeyStore``), and destroyed with their key.
///
/// - A record is a private `CKO_DATA` token object: `CKA_APPLICATION` "paywarden", `CKA_LABEL`
///   "paywarden-key:<key id hex>", `CKA_VALUE` the record's JSON.
/// - A certificate is a `CKO_CERTIFICATE` (`CKC_X_509`) token object with the key's `CKA_ID`.
enum CustodyObjects {
    static let application = "paywarden"
    static let recordLabelPrefix = "paywarden-key:"

    /// What an earlier build left in the token.
    struct Legacy: Sendable {
        var records: [KeyIdentifier: Result<KeyRecord, CustodyError>] = [:]
        var certificates: [KeyIdentifier: [UInt8]] = [:]
    }

    /// The token's records, and its certificates when there are records to move with them.
    static func legacy(_ session: Session) throws(PKCS11Error) -> Legacy {
        let records = try records(session)
        guard !records.isEmpty else { return Legacy() }
        return Legacy(records: records, certificates: try certificates(session))
    }

    /// Every record in the token, by key id. Records that cannot be read are reported, not hidden.
    static func records(_ session: Session) throws(PKCS11Error) -> [KeyIdentifier: Result<KeyRecord, CustodyError>] {
        var records: [KeyIdentifier: Result<KeyRecord, CustodyError>] = [:]
        for handle in try session.findObjects([.objectClass(.data), .string(.application, application)]) {
            let attributes = try session.attributes(of: handle, [.label, .value])
            let label = String(decoding: attributes[.label] ?? [], as: UTF8.self)
            guard label.hasPrefix(recordLabelPrefix), let id = KeyIdentifier(hex: String(label.dropFirst(recordLabelPrefix.count))) else {
                continue
            }
            do {
                let record = try KeyRecord.decode(attributes[.value] ?? [])
                if case .success(let other)? = records[id], other.revision > record.revision { continue }
                records[id] = .success(record)
            } catch {
                if records[id] == nil {
                    records[id] = .failure(CustodyError(.storage, "the record of key \(id) in the HSM is unreadable"))
                }
            }
        }
        return records
    }

    static func deleteRecord(_ id: KeyIdentifier, _ session: Session) throws(PKCS11Error) {
        for handle in try recordHandles(id, session) { try session.destroyObject(handle) }
    }

    private static func recordHandles(_ id: KeyIdentifier, _ session: Session) throws(PKCS11Error) -> [ObjectHandle] {
        try session.findObjects([.objectClass(.data), .string(.application, application), .label(recordLabelPrefix + id.hex)])
    }

    /// Every X.509 certificate object, by key id (DER values).
    static func certificates(_ session: Session) throws(PKCS11Error) -> [KeyIdentifier: [UInt8]] {
        var certificates: [KeyIdentifier: [UInt8]] = [:]
        for handle in try session.findObjects([.objectClass(.certificate), .ulong(.certificateType, CertificateType.x509.rawValue)]) {
            let attributes = try session.attributes(of: handle, [.id, .value])
            guard let id = attributes[.id], !id.isEmpty, let value = attributes[.value] else { continue }
            certificates[KeyIdentifier(bytes: id)] = value
        }
        return certificates
    }

    static func deleteCertificates(_ id: KeyIdentifier, _ session: Session) throws(PKCS11Error) {
        for handle in try session.findObjects([.objectClass(.certificate), .id(id)]) { try session.destroyObject(handle) }
    }
}
