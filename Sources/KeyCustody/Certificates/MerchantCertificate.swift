import ApplePay
import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate Apple issued for a merchant key: a Payment Processing Certificate or a Merchant
/// Identity Certificate, as Apple returns it (DER `.cer`, or PEM).
public struct MerchantCertificate: Sendable, Hashable {
    public let der: [UInt8]
    public let certificate: Certificate
    /// The DER SubjectPublicKeyInfo exactly as it appears in the certificate.
    public let subjectPublicKeyInfo: [UInt8]
    /// The serial number's DER INTEGER (tag, length, content) exactly as it appears in the
    /// certificate, sign octet included: PKCS#11's `CKA_SERIAL_NUMBER`.
    public let serialNumberDER: [UInt8]
    /// Base64 SHA-256 of ``subjectPublicKeyInfo``: what tokens carry as `header.publicKeyHash`.
    public let publicKeyHash: String
    /// The subject's UID attribute.
    public let merchantID: String?
    /// Lowercase hex SHA-256 of the merchant identifier, from extension 1.2.840.113635.100.6.32.
    public let merchantIdentifierHash: String?
    /// What the certificate is for, from its key usages; nil when it is neither.
    public let purpose: KeyPurpose?

    public var notValidBefore: Date { certificate.notValidBefore }
    public var notValidAfter: Date { certificate.notValidAfter }

    /// Parses DER or PEM.
    public init(bytes: [UInt8]) throws(CustodyError) {
        let der: [UInt8]
        if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN") {
            guard let document = try? PEMDocument(pemString: text), document.discriminator == "CERTIFICATE" else {
                throw CustodyError(
                    .certificateUnreadable, "the file is PEM but holds no CERTIFICATE block; export the certificate Apple issued (.cer)")
            }
            der = document.derBytes
        } else {
            der = bytes
        }
        let certificate: Certificate
        let fields: (serialNumber: [UInt8], serialNumberContent: ArraySlice<UInt8>, subjectPublicKeyInfo: [UInt8])
        do {
            certificate = try Certificate(derEncoded: der)
            fields = try Self.encodedFields(of: der)
        } catch {
            throw CustodyError(
                .certificateUnreadable, "the file is not a readable X.509 certificate (DER or PEM); download it again from Apple")
        }
        let spki = fields.subjectPublicKeyInfo
        // RFC 5280 §4.1.2.2: at most 20 octets of value; a 0x00 that only keeps a high bit positive
        // in DER does not count. Longer ones are refused before anything is stored.
        let content = fields.serialNumberContent
        let valueOctets = content.count > 1 && content.first == 0 ? content.count - 1 : content.count
        guard valueOctets <= 20 else {
            throw CustodyError(
                .certificateUnreadable,
                "the certificate's serial number is \(valueOctets) octets; RFC 5280 allows at most 20, so this "
                    + "is not a certificate Apple issued"
            )
        }
        self.der = der
        self.certificate = certificate
        self.subjectPublicKeyInfo = spki
        self.serialNumberDER = fields.serialNumber
        self.publicKeyHash = Data(SHA256.hash(data: spki)).base64EncodedString()
        self.merchantID = certificate.subject.flatMap { $0 }.first { $0.type == ApplePayOID.userID }.flatMap { String($0.value) }
        self.merchantIdentifierHash = try Self.merchantIdentifierHash(certificate)
        self.purpose = Self.purpose(certificate)
    }

    /// The hash in extension .6.32: a DER UTF8String (`0C 40`) of 64 hex digits.
    private static func merchantIdentifierHash(_ certificate: Certificate) throws(CustodyError) -> String? {
        guard let ext = certificate.extensions[oid: ApplePayOID.merchantIdentifierHash] else { return nil }
        let text: String
        if let utf8 = try? ASN1UTF8String(derEncoded: ext.value) {
            text = String(utf8)
        } else {
            text = String(decoding: ext.value, as: UTF8.self)
        }
        guard text.count == 64, text.allSatisfy(\.isHexDigit) else {
            throw CustodyError(
                .certificateUnreadable, "extension 1.2.840.113635.100.6.32 does not hold a 64-digit merchant identifier hash")
        }
        return text.lowercased()
    }

    /// Identity certificates are TLS client certificates; processing certificates allow key
    /// agreement (EC) or key encipherment (RSA).
    private static func purpose(_ certificate: Certificate) -> KeyPurpose? {
        if let eku = try? certificate.extensions.extendedKeyUsage, eku.contains(.clientAuth) { return .identity }
        guard let usage = try? certificate.extensions.keyUsage else { return nil }
        if usage.keyAgreement || (usage.keyEncipherment && !usage.digitalSignature) { return .processing }
        if usage.digitalSignature { return .identity }
        return nil
    }

    /// TBSCertificate's serialNumber (whole, and its content octets) and subjectPublicKeyInfo, as
    /// encoded: re-encoding could differ (swift-certificates keeps the serial without its sign octet).
    private static func encodedFields(of der: [UInt8]) throws -> (
        serialNumber: [UInt8], serialNumberContent: ArraySlice<UInt8>, subjectPublicKeyInfo: [UInt8]
    ) {
        let root = try DER.parse(der)
        guard case .constructed(let certificateNodes) = root.content,
            let tbs = certificateNodes.first(where: { _ in true }),
            case .constructed(let tbsNodes) = tbs.content
        else { throw ASN1Error.invalidASN1Object(reason: "not a certificate") }
        var fields = Array(tbsNodes)
        // version is [0] EXPLICIT and optional
        if let first = fields.first, first.identifier.tagClass == .contextSpecific { fields.removeFirst() }
        guard fields.count > 5, fields[0].identifier == .integer, case .primitive(let content) = fields[0].content else {
            throw ASN1Error.invalidASN1Object(reason: "short TBSCertificate")
        }
        return (Array(fields[0].encodedBytes), content, Array(fields[5].encodedBytes))
    }
}
