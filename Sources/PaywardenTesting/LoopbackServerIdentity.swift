import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A throw-away CA and a server certificate for "localhost" it signed, for the stand-in servers
/// (Apple's gateway, processors' upstreams): a client trusts the CA as an extra root, so the real
/// TLS verification runs against them.
struct LoopbackServerIdentity: Sendable {
    let caDER: [UInt8]
    private let ca: Certificate
    private let caKey: P256.Signing.PrivateKey
    /// TLS 1.2 or later with the server certificate and key; callers add what they require of clients.
    let configuration: TLSConfiguration

    init(caName commonName: String) throws {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            CommonName(commonName)
            OrganizationName("Paywarden Test PKI")
        }
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(7 * 86_400),
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
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(7 * 86_400),
            issuer: caName, subject: try DistinguishedName { CommonName("localhost") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.dnsName("localhost")])
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: try Self.der(server), format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(serverKey.pemRepresentation.utf8), format: .pem))
        )
        tls.minimumTLSVersion = .tlsv12
        caDER = try Self.der(ca)
        self.ca = ca
        self.caKey = caKey
        configuration = tls
    }

    /// A client certificate for `commonName` from the same CA, and its key, both as PEM.
    func clientIdentity(commonName: String) throws -> (certificatePEM: String, keyPEM: String) {
        let key = P256.Signing.PrivateKey()
        let der = try clientCertificate(for: Certificate.PublicKey(key.publicKey), commonName: commonName)
        let base64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return ("-----BEGIN CERTIFICATE-----\n\(base64)\n-----END CERTIFICATE-----\n", key.pemRepresentation + "\n")
    }

    /// A client certificate (DER) from the CA for `publicKey`: what a processor issues for the CSR
    /// of a key that stays elsewhere (Paywarden's HSM).
    func clientCertificate(for publicKey: Certificate.PublicKey, commonName: String) throws -> [UInt8] {
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(7 * 86_400),
            issuer: ca.subject, subject: try DistinguishedName { CommonName(commonName) }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        return try Self.der(certificate)
    }

    static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}
