import Crypto
import Foundation
import PKCS11
import SwiftASN1
import X509
import _CryptoExtras

/// A private key that stays in the HSM, presented to swift-certificates so it can sign a CSR
/// (or anything else) through the HSM.
public struct HSMSigningKey: CustomPrivateKey {
    public let hsm: HSM
    public let key: KeyObject
    public let publicKey: Certificate.PublicKey

    public init(hsm: HSM, key: KeyObject) throws {
        self.hsm = hsm
        self.key = key
        switch key.publicKey {
        case .ecP256(let point):
            self.publicKey = Certificate.PublicKey(try P256.Signing.PublicKey(x963Representation: point))
        case .rsa(let modulus, let exponent):
            self.publicKey = Certificate.PublicKey(try _RSA.Signing.PublicKey(n: modulus, e: exponent))
        }
    }

    public var defaultSignatureAlgorithm: Certificate.SignatureAlgorithm {
        key.algorithm == .ecP256 ? .ecdsaWithSHA256 : .sha256WithRSAEncryption
    }

    public var supportedSignatureAlgorithms: [Certificate.SignatureAlgorithm] { [defaultSignatureAlgorithm] }

    public func signSynchronously(bytes: some DataProtocol, signatureAlgorithm: Certificate.SignatureAlgorithm) throws
        -> Certificate.Signature
    {
        throw CustodyError(.invalidArgument, "HSM keys sign asynchronously")
    }

    public func signAsynchronously(
        bytes: some DataProtocol & Sendable, signatureAlgorithm: Certificate.SignatureAlgorithm
    ) async throws -> Certificate.Signature {
        guard signatureAlgorithm == defaultSignatureAlgorithm else {
            throw CustodyError(.invalidArgument, "key \(key.id) signs only with \(defaultSignatureAlgorithm)")
        }
        let signature: [UInt8]
        switch key.algorithm {
        case .ecP256:
            signature = try await hsm.signECDSA(key.id, digest: Array(SHA256.hash(data: Array(bytes))))
        case .rsa2048:
            signature = try await hsm.signRSAPKCS1SHA256(key.id, message: Array(bytes))
        }
        return try Certificate.Signature(signatureAlgorithm: signatureAlgorithm, signatureBytes: ASN1BitString(bytes: signature[...]))
    }

    // A key in the HSM has no software serialisation.
    public static var defaultPEMDiscriminator: String { "PRIVATE KEY" }

    public func serialize(into coder: inout DER.Serializer) throws {
        throw CustodyError(.invalidArgument, "an HSM key cannot be exported")
    }

    public static func == (lhs: HSMSigningKey, rhs: HSMSigningKey) -> Bool {
        lhs.hsm === rhs.hsm && lhs.key.id == rhs.key.id
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(hsm))
        hasher.combine(key.id)
    }
}
