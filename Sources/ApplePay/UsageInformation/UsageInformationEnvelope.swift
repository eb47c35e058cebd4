import Crypto
import Foundation

/// Something sealed for a merchant token's device as Apple's Merchant Token Usage Information API
/// asks: HPKE auth mode, DHKEM(P-384, HKDF-SHA384), HKDF-SHA384, AES-256-GCM, to the token's
/// public key from the merchant's sender key, with
/// `info = "ApplePayMerchantTokenUsageInformation_1.0" ‖ SHA-256(merchantTokenIdentifier)`.
///
/// Both the notification's metadata and the package use it. UNVERIFIED against Apple: the AEAD's
/// additional data (empty here), the metadata's `info` (assumed the package's), and that the
/// key hashes are over the raw 97-byte points, `data` being Base64 of ciphertext ‖ tag.
public struct UsageInformationEnvelope: Sendable, Hashable {
    /// Apple's `supportedCiphersuite`, the only one there is.
    public static let ciphersuite = "HPKE_AUTH_P384_SHA384_AES_GCM_256"
    static let infoLabel = Array("ApplePayMerchantTokenUsageInformation_1.0".utf8)

    /// `ciphersuite`.
    public let ciphersuite: String
    /// Base64 of ciphertext ‖ tag.
    public let data: String
    /// Base64 of `enc`, the ephemeral public key (X9.63).
    public let ephemeralPublicKey: String
    /// Hex SHA-256 of `info`.
    public let infoHash: String
    /// Base64 of the sender's public key (X9.63): the notification's `merchantPublicKey`.
    public let merchantPublicKey: String
    /// Hex SHA-256 of the sender's public key: the package response's `merchantPublicKeyHash`.
    public let merchantPublicKeyHash: String
    /// Hex SHA-256 of the token's public key.
    public let merchantTokenPublicKeyHash: String

    /// The 73-byte `info` for `merchantTokenIdentifier`.
    public static func info(merchantTokenIdentifier: String) -> [UInt8] {
        infoLabel + Array(SHA256.hash(data: Array(merchantTokenIdentifier.utf8)))
    }

    /// Seals `plaintext` to `merchantTokenPublicKey` (97 bytes, checked on the curve) from `senderKey`.
    public static func seal(
        _ plaintext: [UInt8], merchantTokenIdentifier: String, merchantTokenPublicKey: [UInt8], senderKey: any HPKESenderKey
    ) async throws -> UsageInformationEnvelope {
        guard merchantTokenPublicKey.count == 97, (try? P384.KeyAgreement.PublicKey(x963Representation: merchantTokenPublicKey)) != nil
        else { throw HPKEError.invalidRecipientKey }
        let info = info(merchantTokenIdentifier: merchantTokenIdentifier)
        let sealed = try await HPKEAuthSender.seal(plaintext, recipientKey: merchantTokenPublicKey, info: info, senderKey: senderKey)
        let sender = senderKey.serializedPublicKey
        return UsageInformationEnvelope(
            ciphersuite: ciphersuite, data: Data(sealed.ciphertext).base64EncodedString(),
            ephemeralPublicKey: Data(sealed.encapsulatedKey).base64EncodedString(), infoHash: hexSHA256(info),
            merchantPublicKey: Data(sender).base64EncodedString(), merchantPublicKeyHash: hexSHA256(sender),
            merchantTokenPublicKeyHash: hexSHA256(merchantTokenPublicKey))
    }

    public init(
        ciphersuite: String, data: String, ephemeralPublicKey: String, infoHash: String, merchantPublicKey: String,
        merchantPublicKeyHash: String, merchantTokenPublicKeyHash: String
    ) {
        self.ciphersuite = ciphersuite
        self.data = data
        self.ephemeralPublicKey = ephemeralPublicKey
        self.infoHash = infoHash
        self.merchantPublicKey = merchantPublicKey
        self.merchantPublicKeyHash = merchantPublicKeyHash
        self.merchantTokenPublicKeyHash = merchantTokenPublicKeyHash
    }

    static func hexSHA256(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// The notification's `merchantTokenUsageMetadata` object (Apple's six fields).
    public var notificationMetadata: [String: String] {
        [
            "ciphersuite": ciphersuite, "data": data, "ephemeralPublicKey": ephemeralPublicKey, "infoHash": infoHash,
            "merchantPublicKey": merchantPublicKey, "merchantTokenPublicKeyHash": merchantTokenPublicKeyHash,
        ]
    }

    /// The device's `GetMerchantTokenUsageInformationPackageResponse` (Apple's six fields).
    public var packageResponse: [String: String] {
        [
            "ciphersuite": ciphersuite, "data": data, "ephemeralPublicKey": ephemeralPublicKey, "infoHash": infoHash,
            "merchantPublicKeyHash": merchantPublicKeyHash, "merchantTokenPublicKeyHash": merchantTokenPublicKeyHash,
        ]
    }

    /// Apple's limits on these fields (A5, A8): `data` at most 4000 characters, `ciphersuite` 64,
    /// the keys and hashes 256. Nil when all hold, else which does not.
    public var limitViolation: String? {
        if ciphersuite.count > 64 { return "ciphersuite is longer than 64 characters" }
        if data.count > 4000 { return "the sealed data is \(data.count) Base64 characters; Apple's limit is 4000" }
        for (name, value) in [
            ("ephemeralPublicKey", ephemeralPublicKey), ("infoHash", infoHash), ("merchantPublicKey", merchantPublicKey),
            ("merchantPublicKeyHash", merchantPublicKeyHash), ("merchantTokenPublicKeyHash", merchantTokenPublicKeyHash),
        ] where value.count > 256 {
            return "\(name) is longer than 256 characters"
        }
        return nil
    }
}
