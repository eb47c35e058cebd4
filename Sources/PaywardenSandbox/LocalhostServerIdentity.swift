import Crypto
import Foundation
import SwiftASN1
import X509

/// A CA and a server certificate for "localhost" (or other names) it signed: what the stand-in
/// servers (Apple's gateway, processors' upstreams, merchants' sites) present. A client trusts the
/// CA as an extra root, so the real TLS verification runs against them.
public struct LocalhostServerIdentity: Sendable {
    public let ca: Certificate
    public let caDER: [UInt8]
    public let caKey: P256.Signing.PrivateKey
    public let serverDER: [UInt8]
    public let serverKey: P256.Signing.PrivateKey

    /// A new CA named `caName` and its server certificate for `dnsNames` (wildcards in the first
    /// label allowed), valid for `lifetime` from an hour ago.
    public init(caName commonName: String, lifetime: TimeInterval = 7 * 86_400, dnsNames: [String] = ["localhost"]) throws {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            CommonName(commonName)
            OrganizationName("Paywarden Test PKI")
        }
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(lifetime),
            issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
                SubjectKeyIdentifier(hash: Certificate.PublicKey(caKey.publicKey))
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(lifetime),
            issuer: caName, subject: try DistinguishedName { CommonName(dnsNames.first ?? "localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(dnsNames.map { .dnsName($0) })
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        self.ca = ca
        self.caDER = try Self.der(ca)
        self.caKey = caKey
        self.serverDER = try Self.der(server)
        self.serverKey = serverKey
    }

    public static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}
