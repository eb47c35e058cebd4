import CPKCS11
import Foundation
import PKCS11

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
                records[id] = .success(try KeyRecord.decode(attributes[.value] ?? []))
            } catch {
                records[id] = .failure(CustodyError(.storage, "the record of key \(id) in the HSM is unreadable"))
            }
        }
        return records
    }

    /// Writes the record of `id`, replacing the value in place when it exists.
    static func write(_ record: KeyRecord, for id: KeyIdentifier, _ session: Session) throws(PKCS11Error) {
        let value: [UInt8]
        do { value = try record.encoded() } catch { throw .invalidInput("the key record could not be encoded") }
        if let handle = try recordHandle(id, session) {
            try session.setAttributes(of: handle, [Attribute(.value, bytes: value)])
        } else {
            _ = try session.createObject([
                .objectClass(.data), .bool(.token, true), .bool(.private, true), .bool(.modifiable, true),
                .string(.application, application), .label(recordLabelPrefix + id.hex), Attribute(.value, bytes: value),
            ])
        }
    }

    static func deleteRecord(_ id: KeyIdentifier, _ session: Session) throws(PKCS11Error) {
        if let handle = try recordHandle(id, session) { try session.destroyObject(handle) }
    }

    private static func recordHandle(_ id: KeyIdentifier, _ session: Session) throws(PKCS11Error) -> CK_OBJECT_HANDLE? {
        try session.findObjects([.objectClass(.data), .string(.application, application), .label(recordLabelPrefix + id.hex)]).first
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
    static func storeCertificate(_ certificate: MerchantCertificate, for id: KeyIdentifier, label: String, _ session: Session) throws(PKCS11Error) -> CK_OBJECT_HANDLE {
        var subject: [UInt8] = []
        var issuer: [UInt8] = []
        var serial: [UInt8] = []
        do {
            subject = try certificate.certificate.subject.derBytes()
            issuer = try certificate.certificate.issuer.derBytes()
            // DER INTEGER around the serial's content octets (at most 20 by RFC 5280).
            let content = Array(certificate.certificate.serialNumber.bytes)
            serial = [0x02, UInt8(content.count)] + content
        } catch {
            throw .invalidInput("the certificate's names could not be encoded")
        }
        return try session.createObject([
            .objectClass(.certificate), .ulong(.certificateType, CertificateType.x509.rawValue),
            .bool(.token, true), .bool(.private, false), .id(id), .label(label),
            Attribute(.subject, bytes: subject), Attribute(.issuer, bytes: issuer),
            Attribute(.serialNumber, bytes: serial), Attribute(.value, bytes: certificate.der),
        ])
    }

    static func deleteCertificates(_ id: KeyIdentifier, _ session: Session) throws(PKCS11Error) {
        for handle in try session.findObjects([.objectClass(.certificate), .id(id)]) { try session.destroyObject(handle) }
    }
}
