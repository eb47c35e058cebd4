import Foundation
import PKCS11
import SwiftASN1

/// How key records and certificates are kept in the token, beside the keys.
///
/// - A record is a private `CKO_DATA` token object: `CKA_APPLICATION` "paywarden", `CKA_LABEL`
///   "paywarden-key:<key id hex>", `CKA_VALUE` the record's JSON.
/// - A certificate is a `CKO_CERTIFICATE` (`CKC_X_509`) token object with the key's `CKA_ID`.
enum CustodyObjects {
    static let application = "paywarden"
    static let recordLabelPrefix = "paywarden-key:"

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

    /// Writes the record of `id`: the new revision is created first and the old ones destroyed
    /// after, so an interruption leaves the old or the new record, never none.
    static func write(_ record: KeyRecord, for id: KeyIdentifier, _ session: Session) throws(PKCS11Error) {
        let previous = try recordHandles(id, session)
        var record = record
        record.revision += 1
        let value: [UInt8]
        do { value = try record.encoded() } catch { throw .invalidInput("the key record could not be encoded") }
        _ = try session.createObject([
            .objectClass(.data), .bool(.token, true), .bool(.private, true),
            .string(.application, application), .label(recordLabelPrefix + id.hex), Attribute(.value, bytes: value),
        ])
        // The new revision is written; an old one left behind loses to it on every read.
        for handle in previous { try? session.destroyObject(handle) }
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

    /// Stores `certificate` as the certificate of key `id`. Returns the new object's handle.
    static func storeCertificate(
        _ certificate: MerchantCertificate, for id: KeyIdentifier, label: String, _ session: Session
    ) throws(PKCS11Error) -> ObjectHandle {
        var subject: [UInt8] = []
        var issuer: [UInt8] = []
        do {
            subject = try certificate.certificate.subject.derBytes()
            issuer = try certificate.certificate.issuer.derBytes()
        } catch {
            throw .invalidInput("the certificate's names could not be encoded")
        }
        return try session.createObject([
            .objectClass(.certificate), .ulong(.certificateType, CertificateType.x509.rawValue),
            .bool(.token, true), .bool(.private, false), .id(id), .label(label),
            Attribute(.subject, bytes: subject), Attribute(.issuer, bytes: issuer),
            // CKA_SERIAL_NUMBER is the DER INTEGER as the certificate has it, sign octet included
            // (MerchantCertificate refused serials over the 20 octets RFC 5280 allows).
            Attribute(.serialNumber, bytes: certificate.serialNumberDER), Attribute(.value, bytes: certificate.der),
        ])
    }

    static func deleteCertificates(_ id: KeyIdentifier, _ session: Session) throws(PKCS11Error) {
        for handle in try session.findObjects([.objectClass(.certificate), .id(id)]) { try session.destroyObject(handle) }
    }
}
