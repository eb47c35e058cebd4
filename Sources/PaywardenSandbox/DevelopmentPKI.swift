import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// The development PKI, kept in one directory: an Apple-like token-signing chain (its root is what
/// a development configuration names in `PAYWARDEN_TRUST_ROOTS`), a CA standing in for Apple's
/// WWDR that certifies the sandbox merchant's keys (`PAYWARDEN_CERTIFICATE_ISSUERS`), and a CA with
/// a server certificate for `localhost` that the tour's stand-ins for Apple and a processor present.
///
/// Nothing here is trusted by default: a service trusts it only when its settings name these
/// files, which only the development token's environment does. The private keys are files (0600
/// in a 0700 directory) because this PKI forges test tokens; it must never certify a real key.
public struct DevelopmentPKI: Sendable {
    public let directory: String
    public let tokenSigning: ApplePayTestPKI
    public let merchantCA: TestCertificateAuthority
    /// The stand-ins' server identity: the CA (trust it), the `localhost` certificate and its key, as PEM.
    public let serverCAPEM: String
    public let serverCertificatePEM: String
    public let serverKeyPEM: String

    /// The token-signing root of the PKI in `directory`, for `PAYWARDEN_TRUST_ROOTS`.
    public static func rootFile(in directory: String) -> String { directory + "/root.pem" }
    /// The merchant certificates' issuer, for `PAYWARDEN_CERTIFICATE_ISSUERS`.
    public static func merchantCAFile(in directory: String) -> String { directory + "/merchant-ca.pem" }
    /// The stand-ins' server CA, for the gateway's and the cnpAPI upstream's extra trust.
    public static func serverCAFile(in directory: String) -> String { directory + "/server-ca.pem" }

    private static let publicFiles = [
        "root.pem", "intermediate.pem", "ec-leaf.pem", "rsa-leaf.pem", "merchant-ca.pem", "server-ca.pem",
        "server.pem",
    ]
    private static let privateFiles = ["ec-leaf.key", "rsa-leaf.key", "merchant-ca.key", "server.key"]

    /// Whether `directory` holds a whole PKI.
    public static func exists(in directory: String) -> Bool {
        (publicFiles + privateFiles.map { "private/" + $0 }).allSatisfy { FileManager.default.fileExists(atPath: directory + "/" + $0) }
    }

    /// How long before a certificate of the PKI expires it is made again.
    public static let renewalMargin: TimeInterval = 30 * 86_400

    /// The PKI in `directory`, created there first if it is not whole, or made again when a
    /// certificate of it is within ``renewalMargin`` of expiring (its CAs' keys are not kept, so
    /// a leaf cannot be re-issued alone). Keys certified by the old merchant CA then need new
    /// certificates: ``certifies(_:at:)`` says which still stand.
    public static func loadOrCreate(in directory: String, now: Date = Date()) throws -> DevelopmentPKI {
        if exists(in: directory) {
            let pki = try load(from: directory)
            let certificates = [pki.tokenSigning.ecLeaf.certificate, pki.tokenSigning.rsaLeaf.certificate, pki.merchantCA.certificate]
            if certificates.allSatisfy({ $0.notValidAfter > now.addingTimeInterval(renewalMargin) }) { return pki }
        }
        try create(in: directory)
        return try load(from: directory)
    }

    /// Whether `certificate` (a sandbox key's) is this PKI's merchant CA's and has more than
    /// ``renewalMargin`` left.
    public func certifies(_ certificate: Certificate, at now: Date = Date()) -> Bool {
        certificate.issuer == merchantCA.certificate.subject
            && merchantCA.certificate.publicKey.isValidSignature(certificate.signature, for: certificate)
            && certificate.notValidAfter > now.addingTimeInterval(Self.renewalMargin)
    }

    public static func load(from directory: String) throws -> DevelopmentPKI {
        /// The file's text made into a value; any failure is the file's, named.
        func read<Value>(_ name: String, _ make: (String) throws -> Value) throws -> Value {
            guard let text = try? String(contentsOfFile: directory + "/" + name, encoding: .utf8), let value = try? make(text) else {
                throw DevelopmentPKIError.unreadable(directory + "/" + name)
            }
            return value
        }
        func der(_ name: String) throws -> [UInt8] { try read(name) { try PEMDocument(pemString: $0).derBytes } }
        let ecKey = try read("private/ec-leaf.key") { try P256.Signing.PrivateKey(pemRepresentation: $0) }
        let rsaKey = try read("private/rsa-leaf.key") { try _RSA.Signing.PrivateKey(pemRepresentation: $0) }
        let ecLeaf = try read("ec-leaf.pem") { try ApplePayTestPKI.Leaf(der: try PEMDocument(pemString: $0).derBytes, key: .p256(ecKey)) }
        let rsaLeaf = try read("rsa-leaf.pem") { try ApplePayTestPKI.Leaf(der: try PEMDocument(pemString: $0).derBytes, key: .rsa(rsaKey)) }
        guard ecLeaf.certificate.publicKey == Certificate.PublicKey(ecKey.publicKey) else {
            throw DevelopmentPKIError.keyMismatch("ec-leaf.pem")
        }
        guard rsaLeaf.certificate.publicKey == Certificate.PublicKey(rsaKey.publicKey) else {
            throw DevelopmentPKIError.keyMismatch("rsa-leaf.pem")
        }
        let caKey = try read("private/merchant-ca.key") { try P256.Signing.PrivateKey(pemRepresentation: $0) }
        return DevelopmentPKI(
            directory: directory,
            tokenSigning: try ApplePayTestPKI(
                rootDER: try der("root.pem"), intermediateDER: try der("intermediate.pem"), ecLeaf: ecLeaf, rsaLeaf: rsaLeaf),
            merchantCA: try TestCertificateAuthority(certificateDER: try der("merchant-ca.pem"), privateKey: caKey),
            serverCAPEM: try read("server-ca.pem") { $0 }, serverCertificatePEM: try read("server.pem") { $0 },
            serverKeyPEM: try read("private/server.key") { $0 })
    }

    /// Writes a new PKI into `directory` (replacing a partial one).
    private static func create(in directory: String) throws {
        let files = FileManager.default
        try files.createDirectory(atPath: directory + "/private", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try files.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory + "/private")
        let signing = try ApplePayTestPKI(name: "Paywarden Development")
        let merchantCA = try TestCertificateAuthority(commonName: "Paywarden Development WWDR CA")
        let server = try LocalhostServerIdentity(caName: "Paywarden Development Stand-in CA", lifetime: 10 * 365 * 86_400)
        guard case .p256(let ecKey) = signing.ecLeaf.key, case .rsa(let rsaKey) = signing.rsaLeaf.key else {
            preconditionFailure("ApplePayTestPKI makes a P-256 EC leaf and an RSA leaf")
        }
        let contents: [(String, String)] = [
            ("root.pem", signing.rootDER.pem("CERTIFICATE")), ("intermediate.pem", signing.intermediateDER.pem("CERTIFICATE")),
            ("ec-leaf.pem", signing.ecLeaf.der.pem("CERTIFICATE")), ("rsa-leaf.pem", signing.rsaLeaf.der.pem("CERTIFICATE")),
            ("merchant-ca.pem", merchantCA.certificatePEM), ("server-ca.pem", server.caDER.pem("CERTIFICATE")),
            ("server.pem", server.serverDER.pem("CERTIFICATE")),
            ("private/ec-leaf.key", ecKey.pemRepresentation + "\n"), ("private/rsa-leaf.key", rsaKey.pemRepresentation + "\n"),
            ("private/merchant-ca.key", merchantCA.privateKey.pemRepresentation + "\n"),
            ("private/server.key", server.serverKey.pemRepresentation + "\n"),
        ]
        for (name, text) in contents {
            let path = directory + "/" + name
            guard files.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw DevelopmentPKIError.unwritable(path)
            }
            try files.setAttributes([.posixPermissions: name.hasPrefix("private/") ? 0o600 : 0o644], ofItemAtPath: path)
        }
    }
}
