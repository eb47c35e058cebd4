import Crypto
import Foundation
import PaywardenPrimitives
import SwiftASN1
import X509
import _CryptoExtras

/// Encrypts and signs payment tokens exactly as Apple does, with a test PKI: EC_v1 (ephemeral
/// P-256 ECDH, Apple's KDF, AES-256-GCM with a 16-byte zero IV) and RSA_v1 (AES-128-GCM key
/// wrapped with RSA-OAEP SHA-256), signed with a detached BER CMS (indefinite lengths, the
/// certificate SET unsorted: leaf first) over ephemeralPublicKey/wrappedKey ‖ data ‖
/// transactionId ‖ applicationData.
public struct TokenForge: Sendable {
    public let pki: ApplePayTestPKI

    public init(pki: ApplePayTestPKI) {
        self.pki = pki
    }

    /// How a token deviates from a genuine one.
    public struct Options: Sendable {
        public var signingTime = Date()
        public var transactionID: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }
        public var applicationData: [UInt8]?
        /// Sign with this leaf instead of the one matching the version.
        public var leaf: ApplePayTestPKI.Leaf?
        /// Add a second SignerInfo.
        public var twoSigners = false
        /// Replace the ephemeral public key (SPKI DER) after encryption, and sign it.
        public var ephemeralPublicKeyOverride: [UInt8]?
        /// RSA_v1: this wrapped key in place of the real one (bytes that are no OAEP encryption,
        /// say), signed like any other, so that only the key's unwrapping can fail.
        public var wrappedKeyOverride: [UInt8]?
        public var version = "EC_v1"
        /// Zero octets put before the signer's serial number in the SignerInfo (which the signature
        /// does not cover): an INTEGER encoding X.690 forbids, as an attacker re-encoding a token would.
        public var signerSerialPadding = 0

        public init() {}
    }

    /// An EC_v1 token's paymentData (JSON) carrying `payload`, for the merchant key `merchant`.
    public func ecV1(payload: [UInt8], merchant: P256.KeyAgreement.PublicKey, merchantIdentifierHash: [UInt8], options: Options = Options())
        throws -> [UInt8]
    {
        let ephemeral = P256.KeyAgreement.PrivateKey()
        let z = try ephemeral.sharedSecretFromKeyAgreement(with: merchant)
        let otherInfo = [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8) + merchantIdentifierHash
        let key = OneStepKDF.sha256(sharedSecret: z, otherInfo: otherInfo)
        let data = try Self.seal(payload, key: key)
        let spki = options.ephemeralPublicKeyOverride ?? Array(ephemeral.publicKey.derRepresentation)
        return try token(keyField: ("ephemeralPublicKey", spki), data: data, leaf: options.leaf ?? pki.ecLeaf, options: options)
    }

    /// An RSA_v1 token's paymentData (JSON) for the merchant's RSA key.
    public func rsaV1(payload: [UInt8], merchant: _RSA.Encryption.PublicKey, options: Options = Options()) throws -> [UInt8] {
        let key = SymmetricKey(size: .bits128)
        let wrapped = Array(try merchant.encrypt(key.withUnsafeBytes { Data($0) }, padding: .PKCS1_OAEP_SHA256))
        let data = try Self.seal(payload, key: key)
        var options = options
        if options.version == "EC_v1" { options.version = "RSA_v1" }
        let keyField = ("wrappedKey", options.wrappedKeyOverride ?? wrapped)
        return try token(keyField: keyField, data: data, leaf: options.leaf ?? pki.rsaLeaf, options: options)
    }

    /// `publicKeyHash` of a merchant certificate or key: SHA-256 of its SubjectPublicKeyInfo.
    public static func publicKeyHash(spki: [UInt8]) -> String {
        Data(SHA256.hash(data: spki)).base64EncodedString()
    }

    public static func merchantIdentifierHash(_ merchantID: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(merchantID.utf8)))
    }

    private static func seal(_ payload: [UInt8], key: SymmetricKey) throws -> [UInt8] {
        let box = try AES.GCM.seal(payload, using: key, nonce: AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 16)))
        return Array(box.ciphertext) + Array(box.tag)
    }

    private func token(keyField: (String, [UInt8]), data: [UInt8], leaf: ApplePayTestPKI.Leaf, options: Options) throws -> [UInt8] {
        let signedContent = keyField.1 + data + options.transactionID + (options.applicationData ?? [])
        let signature = try CMSWriter.signedData(
            content: signedContent, leaf: leaf, certificates: [leaf.der, pki.intermediateDER],
            signingTime: options.signingTime, twoSigners: options.twoSigners, serialPadding: options.signerSerialPadding
        )
        var header: [String: String] = [
            keyField.0: Data(keyField.1).base64EncodedString(),
            "publicKeyHash": "",  // filled by the caller's merchant: see `withPublicKeyHash`
            "transactionId": Hex.encode(options.transactionID),
        ]
        if let applicationData = options.applicationData {
            header["applicationData"] = Hex.encode(applicationData)
        }
        let paymentData: [String: Any] = [
            "version": options.version, "data": Data(data).base64EncodedString(),
            "signature": Data(signature).base64EncodedString(), "header": header,
        ]
        return Array(try JSONSerialization.data(withJSONObject: paymentData, options: [.sortedKeys]))
    }
}

extension Array where Element == UInt8 {
    /// This token JSON with `header.publicKeyHash` set (it is not signed, so it can change freely).
    public func withPublicKeyHash(_ hash: String) throws -> [UInt8] {
        try editingToken { $0["header", default: [:]] = ($0["header"] as? [String: Any] ?? [:]).merging(["publicKeyHash": hash]) { $1 } }
    }

    /// This token JSON with `edit` applied to its top-level object.
    public func editingToken(_ edit: (inout [String: Any]) throws -> Void) throws -> [UInt8] {
        guard var object = try JSONSerialization.jsonObject(with: Data(self)) as? [String: Any] else { throw CocoaError(.coderReadCorrupt) }
        try edit(&object)
        return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// This token JSON with one byte of a Base64 field flipped.
    public func flippingByte(of field: String, inHeader: Bool = false, at index: Int? = nil) throws -> [UInt8] {
        try editingToken { object in
            var container = inHeader ? (object["header"] as? [String: Any] ?? [:]) : object
            var bytes = Array(Data(base64Encoded: container[field] as! String)!)
            bytes[index ?? bytes.count / 2] ^= 0x01
            container[field] = Data(bytes).base64EncodedString()
            if inHeader { object["header"] = container } else { object = container }
        }
    }
}

extension TokenForge.Options {
    /// An RSA_v1 wrapped key of 256 random bytes under any 2048-bit modulus (the first is 0): RSA
    /// decrypts it, and its OAEP decoding fails.
    public static var badWrappedKey: TokenForge.Options {
        var options = TokenForge.Options()
        options.wrappedKeyOverride = [0] + (1..<256).map { _ in UInt8.random(in: 0...255) }
        return options
    }
}
