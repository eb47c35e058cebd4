import ApplePay
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// An Apple-like payment-token signing PKI: a P-384 root standing in for Apple Root CA - G3, an
/// intermediate marked 1.2.840.113635.100.6.2.14, and leaves marked 1.2.840.113635.100.6.29
/// (P-256 for EC_v1, RSA-2048 for RSA_v1). Variants drop a marker, to test that they are
/// required.
public struct ApplePayTestPKI: Sendable {
    public struct Leaf: Sendable {
        public let certificate: Certificate
        public let der: [UInt8]
        public let key: SigningKey

        /// A leaf kept on disk: its certificate (DER) and key.
        public init(der: [UInt8], key: SigningKey) throws {
            self.certificate = try Certificate(derEncoded: der)
            self.der = der
            self.key = key
        }

        init(certificate: Certificate, der: [UInt8], key: SigningKey) {
            self.certificate = certificate
            self.der = der
            self.key = key
        }
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

    /// - Parameters:
    ///   - markIntermediate: give the intermediate its 1.2.840.113635.100.6.2.14 extension.
    ///   - markLeaves: give the leaves their 1.2.840.113635.100.6.29 extension.
    public init(name: String = "Test", markIntermediate: Bool = true, markLeaves: Bool = true, rsaLeaf: Bool = true) throws {
        let now = Date()
        let year: TimeInterval = 365 * 86_400
        let rootKey = P384.Signing.PrivateKey()
        let rootName = try Self.name("\(name) Root CA - G3", unit: "Test Certification Authority")
        root = try Self.authority(
            subject: rootName, publicKey: .init(rootKey.publicKey), issuer: rootName, issuerKey: rootKey,
            validity: (now - 5 * year)...(now + 20 * year), maxPathLength: nil, marked: false
        )
        rootDER = try Self.der(root)

        let intermediateKey = P256.Signing.PrivateKey()
        let intermediateName = try Self.name("\(name) Application Integration CA - G3", unit: "Test Certification Authority")
        intermediate = try Self.authority(
            subject: intermediateName, publicKey: .init(intermediateKey.publicKey), issuer: rootName, issuerKey: rootKey,
            validity: (now - 4 * year)...(now + 10 * year), maxPathLength: 0, marked: markIntermediate
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

    /// A PKI kept on disk (the development PKI): what signing a token needs, and the root to trust.
    public init(rootDER: [UInt8], intermediateDER: [UInt8], ecLeaf: Leaf, rsaLeaf: Leaf) throws {
        root = try Certificate(derEncoded: rootDER)
        self.rootDER = rootDER
        intermediate = try Certificate(derEncoded: intermediateDER)
        self.intermediateDER = intermediateDER
        self.ecLeaf = ecLeaf
        self.rsaLeaf = rsaLeaf
    }

    private static func leaf(
        name: String, publicKey: Certificate.PublicKey, key: SigningKey, issuer: DistinguishedName,
        issuerKey: P256.Signing.PrivateKey, marked: Bool, now: Date
    ) throws -> Leaf {
        let subject = try Self.name(name, unit: "iOS Systems")
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: publicKey,
            notValidBefore: now - 30 * 86_400, notValidAfter: now + 365 * 86_400, issuer: issuer, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if marked { Certificate.Extension(oid: ApplePayOID.paymentTokenSigningLeaf, critical: false, value: [0x05, 0x00]) }
            },
            issuerPrivateKey: .init(issuerKey)
        )
        return Leaf(certificate: certificate, der: try der(certificate), key: key)
    }

    /// A CA certificate signed by the P-384 root key; `marked` adds Apple's intermediate OID.
    private static func authority(
        subject: DistinguishedName, publicKey: Certificate.PublicKey, issuer: DistinguishedName, issuerKey: P384.Signing.PrivateKey,
        validity: ClosedRange<Date>, maxPathLength: Int?, marked: Bool
    ) throws -> Certificate {
        try Certificate(
            version: .v3, serialNumber: .init(), publicKey: publicKey,
            notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound, issuer: issuer, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: maxPathLength))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                if marked {
                    Certificate.Extension(oid: ApplePayOID.paymentTokenIntermediate, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: .init(issuerKey)
        )
    }

    /// Apple's naming pattern, in the test PKI's organisation.
    private static func name(_ commonName: String, unit: String) throws -> DistinguishedName {
        try DistinguishedName {
            CommonName(commonName)
            OrganizationalUnitName(unit)
            OrganizationName("Paywarden Test PKI")
            CountryName("US")
        }
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
