import Crypto
import _CryptoExtras
import Foundation
import SwiftASN1
import X509

/// An Apple-like payment-token signing PKI: a P-384 root standing in for Apple Root CA - G3, an
/// intermediate marked 1.2.840.113635.100.6.2.14, and leaves marked 1.2.840.113635.100.6.29
/// (P-256 for EC_v1, RSA-2048 for RSA_v1). Variants drop a marker, to test that they are
/// required.
public struct ApplePayTestPKI: Sendable {
    public struct Leaf: Sendable {
        public let certificate: Certificate
        public let der: [UInt8]
        public let key: SigningKey
    }

    public enum SigningKey: Sendable {
        case p256(P256.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey)
    }

    public let root: Certificate
    public let rootDER: [UInt8]
    public let intermediate: Certificate
    public let intermediateDER: [UInt8]
    public let ecLeaf: Leaf
    public let rsaLeaf: Leaf
    private let intermediateKey: P256.Signing.PrivateKey

    public static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 29]
    public static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 14]

    /// - Parameters:
    ///   - markIntermediate: give the intermediate its 1.2.840.113635.100.6.2.14 extension.
    ///   - markLeaves: give the leaves their 1.2.840.113635.100.6.29 extension.
    public init(name: String = "Test", markIntermediate: Bool = true, markLeaves: Bool = true, rsaLeaf: Bool = true) throws {
        let now = Date()
        let year: TimeInterval = 365 * 86_400
        let rootKey = P384.Signing.PrivateKey()
        let rootName = try DistinguishedName {
            CommonName("\(name) Root CA - G3")
            OrganizationalUnitName("Test Certification Authority")
            OrganizationName("Paywarden Test PKI")
            CountryName("US")
        }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey),
            notValidBefore: now - 5 * year, notValidAfter: now + 20 * year, issuer: rootName, subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(rootKey)
        )
        rootDER = try Self.der(root)

        intermediateKey = P256.Signing.PrivateKey()
        let intermediateName = try DistinguishedName {
            CommonName("\(name) Application Integration CA - G3")
            OrganizationalUnitName("Test Certification Authority")
            OrganizationName("Paywarden Test PKI")
            CountryName("US")
        }
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: now - 4 * year, notValidAfter: now + 10 * year, issuer: rootName, subject: intermediateName,
            signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                if markIntermediate { Certificate.Extension(oid: Self.intermediateMarker, critical: false, value: [0x05, 0x00]) }
            },
            issuerPrivateKey: .init(rootKey)
        )
        intermediateDER = try Self.der(intermediate)

        let ecKey = P256.Signing.PrivateKey()
        let ec = try Self.leaf(
            name: "ecc-smp-broker-sign_UC4-TEST", publicKey: .init(ecKey.publicKey), key: .p256(ecKey), issuer: intermediateName,
            issuerKey: intermediateKey, marked: markLeaves, now: now)
        ecLeaf = ec
        if rsaLeaf {
            let rsaKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            self.rsaLeaf = try Self.leaf(
                name: "rsa-smp-broker-sign_UC4-TEST", publicKey: .init(rsaKey.publicKey), key: .rsa(rsaKey), issuer: intermediateName,
                issuerKey: intermediateKey, marked: markLeaves, now: now)
        } else {
            self.rsaLeaf = ec
        }
    }

    private static func leaf(
        name: String, publicKey: Certificate.PublicKey, key: SigningKey, issuer: DistinguishedName,
        issuerKey: P256.Signing.PrivateKey, marked: Bool, now: Date
    ) throws -> Leaf {
        let subject = try DistinguishedName {
            CommonName(name)
            OrganizationalUnitName("iOS Systems")
            OrganizationName("Paywarden Test PKI")
            CountryName("US")
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: publicKey,
            notValidBefore: now - 30 * 86_400, notValidAfter: now + 365 * 86_400, issuer: issuer, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if marked { Certificate.Extension(oid: leafMarker, critical: false, value: [0x05, 0x00]) }
            },
            issuerPrivateKey: .init(issuerKey)
        )
        return Leaf(certificate: certificate, der: try der(certificate), key: key)
    }

    /// Writes the root as PEM for `PAYWARDEN_TRUST_ROOTS` and returns the path.
    public func writeRoot(to directory: String) throws -> String {
        let path = directory + "/test-root-\(UUID().uuidString.prefix(6)).pem"
        try rootDER.pem("CERTIFICATE").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}
