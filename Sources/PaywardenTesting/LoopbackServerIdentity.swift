import Crypto
import Foundation
import NIOSSL
import PaywardenSandbox
import SwiftASN1
import X509

/// The TLS side of a stand-in server (Apple's gateway, processors' upstreams): a server
/// certificate for "localhost" and the CA a client trusts as an extra root, so the real TLS
/// verification runs against them. A throw-away CA can also issue client certificates; one read
/// from files (the development PKI's) cannot.
struct LoopbackServerIdentity: Sendable {
    let caDER: [UInt8]
    /// The CA that issued the server certificate, when this process made it.
    private let issuer: LocalhostServerIdentity?
    /// TLS 1.2 or later with the server certificate and key; callers add what they require of clients.
    let configuration: TLSConfiguration

    init(caName commonName: String, dnsNames: [String] = ["localhost"]) throws {
        let identity = try LocalhostServerIdentity(caName: commonName, dnsNames: dnsNames)
        issuer = identity
        caDER = identity.caDER
        configuration = try Self.configuration(
            chain: [try NIOSSLCertificate(bytes: identity.serverDER, format: .der)],
            key: try NIOSSLPrivateKey(bytes: Array(identity.serverKey.pemRepresentation.utf8), format: .pem))
    }

    /// The identity in PEM files: the CA, the server certificate and its key.
    init(caPEM: String, certificatePEM: String, keyPEM: String) throws {
        issuer = nil
        caDER = try PEMDocument(pemString: caPEM).derBytes
        configuration = try Self.configuration(
            chain: try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8)),
            key: try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem))
    }

    private static func configuration(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        return tls
    }

    /// A client certificate for `commonName` from the same CA, and its key, both as PEM.
    func clientIdentity(commonName: String) throws -> (certificatePEM: String, keyPEM: String) {
        let key = P256.Signing.PrivateKey()
        let der = try clientCertificate(for: Certificate.PublicKey(key.publicKey), commonName: commonName)
        return (der.pem("CERTIFICATE"), key.pemRepresentation + "\n")
    }

    /// A client certificate (DER) from the CA for `publicKey`: what a processor issues for the CSR
    /// of a key that stays elsewhere (Paywarden's HSM).
    func clientCertificate(for publicKey: Certificate.PublicKey, commonName: String) throws -> [UInt8] {
        guard let issuer else { preconditionFailure("an identity read from files has no CA key to issue client certificates") }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(7 * 86_400),
            issuer: issuer.ca.subject, subject: try DistinguishedName { CommonName(commonName) }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
            },
            issuerPrivateKey: Certificate.PrivateKey(issuer.caKey)
        )
        return try Self.der(certificate)
    }

    static func der(_ certificate: Certificate) throws -> [UInt8] { try LocalhostServerIdentity.der(certificate) }
}
