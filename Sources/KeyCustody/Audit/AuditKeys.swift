import Crypto
import PKCS11

/// The two HSM keys that seal the audit trail (purpose `audit`): an HMAC-SHA256 key that chains
/// every line, and an EC P-256 key that signs the checkpoints. Both are known by label, made in the
/// HSM on first use, sensitive and never extractable like every key Paywarden makes. The signing
/// key's public half is what an auditor checks checkpoints with, without the HSM.
public struct AuditKeys: Sendable {
    public static let macLabel = "paywarden-audit/mac"
    public static let signingLabel = "paywarden-audit/signing"

    public let mac: KeyIdentifier
    public let signing: KeyIdentifier
    public let publicKey: P256.Signing.PublicKey

    /// The keys in `hsm`, made there when it has none. Two processes making them at once leave two
    /// of a kind: each writer uses the one it found or made, and the verifier tries every one.
    public static func open(_ hsm: HSM) async throws(CustodyError) -> AuditKeys {
        do throws(PKCS11Error) {
            let mac: KeyIdentifier
            if let found = try await macKeys(hsm).first {
                mac = found.id
            } else {
                mac = try await hsm.generateSecretKey(SecretKeySpecification(label: macLabel, kind: .hmacSHA256)).id
            }
            let signing: KeyObject
            if let found = try await signingKeys(hsm).first {
                signing = found.key
            } else {
                signing = try await hsm.generateKeyPair(KeySpecification(label: signingLabel, algorithm: .ecP256, usage: .sign))
            }
            guard let publicKey = publicKey(of: signing) else {
                throw PKCS11Error.invalidInput("the audit signing key \(signing.id) has no readable P-256 public key")
            }
            return AuditKeys(mac: mac, signing: signing.id, publicKey: publicKey)
        } catch {
            throw CustodyError(.hsm, "the audit trail's keys could not be found or made in the HSM: \(error)", underlying: error)
        }
    }

    /// The HMAC keys of the audit trail in `hsm`.
    public static func macKeys(_ hsm: HSM) async throws(PKCS11Error) -> [SecretKeyObject] {
        try await hsm.secretKeys().filter { $0.label == macLabel && $0.kind == .hmacSHA256 }
    }

    /// The checkpoint-signing keys in `hsm`, with their public keys.
    public static func signingKeys(_ hsm: HSM) async throws(PKCS11Error) -> [(key: KeyObject, publicKey: P256.Signing.PublicKey)] {
        try await hsm.keys().compactMap { key in
            guard key.label == signingLabel, let publicKey = publicKey(of: key) else { return nil }
            return (key, publicKey)
        }
    }

    /// Whether `key` is the audit trail's and no merchant's (key listings leave it out).
    public static func isAuditKey(_ key: KeyObject) -> Bool { key.label == signingLabel }

    private static func publicKey(of key: KeyObject) -> P256.Signing.PublicKey? {
        guard case .ecP256(let point) = key.publicKey else { return nil }
        return try? P256.Signing.PublicKey(x963Representation: point)
    }
}
