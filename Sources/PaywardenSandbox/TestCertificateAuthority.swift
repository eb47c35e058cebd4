import ApplePay
import Crypto
import Foundation
import KeyCustody
import SwiftASN1
import X509

/// A certificate authority standing in for Apple Worldwide Developer Relations CA - G2: it
/// issues Payment Processing and Merchant Identity certificates from Paywarden's CSRs, with the
/// subject and extensions Apple puts in them (UID, 1.2.840.113635.100.6.32, key usages).
public struct TestCertificateAuthority: Sendable {
    public let name: DistinguishedName
    public let privateKey: P256.Signing.PrivateKey
    /// The CA's own self-signed certificate (same key and name), so a TLS server can require
    /// client certificates issued by it, as Apple's gateway requires ones from WWDR.
    public let certificate: Certificate
    public let certificateDER: [UInt8]

    /// One CA for the test process, for the harnesses that certify keys on their own (test
    /// servers, decryption environments, benches); their key stores trust it through ``issuers``.
    public static let shared: TestCertificateAuthority = try! TestCertificateAuthority()

    /// This CA in place of Apple's pinned ones, as `PAYWARDEN_CERTIFICATE_ISSUERS` would put it,
    /// for a ``MerchantKeyStore`` in the test process.
    public var issuers: CertificateIssuers {
        CertificateIssuers(replacingWith: [certificate], source: "the test CA \"\(commonName)\"")
    }

    /// The CA certificate as PEM, for `PAYWARDEN_CERTIFICATE_ISSUERS` in a child process.
    public var certificatePEM: String { certificateDER.pem("CERTIFICATE") }

    public var commonName: String {
        name.flatMap { $0 }.first { $0.type == .RDNAttributeType.commonName }.flatMap { String($0.value) } ?? "test CA"
    }

    public init(commonName: String = "Test Worldwide Developer Relations CA - G2") throws {
        let privateKey = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            CommonName(commonName)
            OrganizationalUnitName("Test Certification Authority")
            OrganizationName("Paywarden Test PKI")
            CountryName("US")
        }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(privateKey.publicKey),
            notValidBefore: now.addingTimeInterval(-2 * 86_400),
            notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: Certificate.PublicKey(privateKey.publicKey))
            },
            issuerPrivateKey: Certificate.PrivateKey(privateKey)
        )
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        self.privateKey = privateKey
        self.name = name
        self.certificate = certificate
        self.certificateDER = serializer.serializedBytes
    }

    /// A CA kept on disk (the development PKI's): its self-signed certificate (DER) and key.
    public init(certificateDER: [UInt8], privateKey: P256.Signing.PrivateKey) throws {
        let certificate = try Certificate(derEncoded: certificateDER)
        guard certificate.publicKey == Certificate.PublicKey(privateKey.publicKey) else {
            throw DevelopmentPKIError.keyMismatch("the CA certificate")
        }
        self.privateKey = privateKey
        self.name = certificate.subject
        self.certificate = certificate
        self.certificateDER = certificateDER
    }

    /// What a certificate carries in extension 1.2.840.113635.100.6.32.
    public enum MerchantIdentifierHash: Sendable {
        /// SHA-256 of the subject UID, as Apple issues it.
        case ofSubjectUID
        /// SHA-256 of another identifier (a certificate that is not for its own merchant).
        case of(String)
        /// No extension at all.
        case absent
    }

    /// Issues a certificate for the public key in `csrPEM`, as Apple would for `merchantID`.
    /// - Parameters:
    ///   - uid: the subject UID (normally the merchant id; differ to test mismatches).
    ///   - validity: Apple's processing certificates last 25 months.
    ///   - serialNumber: random 20 octets, as Apple's; give one to test other lengths.
    public func issue(
        csrPEM: String, merchantID: String, purpose: KeyPurpose, uid: String? = nil,
        notBefore: Date = Date().addingTimeInterval(-3600), notAfter: Date? = nil,
        serialNumber: Certificate.SerialNumber = Certificate.SerialNumber(),
        merchantIdentifierHash: MerchantIdentifierHash = .ofSubjectUID
    ) throws -> [UInt8] {
        let request = try CertificateSigningRequest(pemEncoded: csrPEM)
        return try issue(
            publicKey: request.publicKey, merchantID: merchantID, purpose: purpose, uid: uid,
            notBefore: notBefore, notAfter: notAfter, serialNumber: serialNumber, merchantIdentifierHash: merchantIdentifierHash)
    }

    public func issue(
        publicKey: Certificate.PublicKey, merchantID: String, purpose: KeyPurpose, uid: String? = nil,
        notBefore: Date = Date().addingTimeInterval(-3600), notAfter: Date? = nil,
        serialNumber: Certificate.SerialNumber = Certificate.SerialNumber(),
        merchantIdentifierHash: MerchantIdentifierHash = .ofSubjectUID
    ) throws -> [UInt8] {
        let subjectUID = uid ?? merchantID
        let prefix = purpose == .processing ? "Apple Pay Payment Processing:" : "Merchant ID: "
        let subject = DistinguishedName([
            RelativeDistinguishedName(.init(type: ApplePayOID.userID, value: .init(utf8String: subjectUID))),
            RelativeDistinguishedName(.init(type: .RDNAttributeType.commonName, value: .init(utf8String: prefix + subjectUID))),
            RelativeDistinguishedName(.init(type: .RDNAttributeType.organizationalUnitName, value: .init(utf8String: "TESTTEAMID"))),
            RelativeDistinguishedName(.init(type: .RDNAttributeType.countryName, value: try .init(printableString: "US"))),
        ])
        let hashed: String? =
            switch merchantIdentifierHash {
            case .ofSubjectUID: subjectUID
            case .of(let other): other
            case .absent: nil
            }
        var hashValue = DER.Serializer()
        if let hashed { try hashValue.serialize(ASN1UTF8String(MerchantKeyStore.merchantIdentifierHash(hashed).uppercased())) }
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            if purpose == .processing {
                Critical(KeyUsage(keyEncipherment: true, keyAgreement: true))
            } else {
                Critical(KeyUsage(digitalSignature: true, keyEncipherment: true))
                try ExtendedKeyUsage([.clientAuth])
            }
            if hashed != nil {
                Certificate.Extension(oid: ApplePayOID.merchantIdentifierHash, critical: false, value: hashValue.serializedBytes[...])
            }
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: serialNumber,
            publicKey: publicKey,
            notValidBefore: notBefore,
            notValidAfter: notAfter ?? notBefore.addingTimeInterval(25 * 30.5 * 86_400),
            issuer: name,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: Certificate.PrivateKey(privateKey)
        )
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}

extension Array where Element == UInt8 {
    /// PEM text of DER bytes.
    public func pem(_ label: String) -> String {
        let body = Data(self).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(body)\n-----END \(label)-----\n"
    }
}
