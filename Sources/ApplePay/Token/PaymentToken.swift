import Foundation
import PaywardenPrimitives

/// A `PKPaymentToken`'s `paymentData`, decoded strictly: every field present with the right
/// encoding and a plausible size, or a `malformed_token` error saying which one is wrong.
public struct PaymentToken: Sendable, Hashable {
    public let version: PaymentTokenVersion
    /// Ciphertext followed by the 16-byte GCM tag.
    public let data: [UInt8]
    /// The detached CMS signature (BER).
    public let signature: [UInt8]
    public let header: Header

    public struct Header: Sendable, Hashable {
        /// EC_v1: the ephemeral key's DER SubjectPublicKeyInfo.
        public let ephemeralPublicKey: [UInt8]?
        /// RSA_v1: the AES key, RSA-OAEP-encrypted to the merchant key.
        public let wrappedKey: [UInt8]?
        /// SHA-256 of the merchant certificate's SubjectPublicKeyInfo: selects the key.
        public let publicKeyHash: [UInt8]
        public let transactionID: [UInt8]
        /// SHA-256 of the request's applicationData, when there was one.
        public let applicationData: [UInt8]?
    }

    /// The largest request body accepted as a token.
    public static let maximumEncodedSize = 64 * 1024
    static let maximumDataSize = 32 * 1024
    static let maximumSignatureSize = 16 * 1024

    /// The transaction identifier as the device wrote it (lowercase hex).
    public var transactionIDHex: String { Hex.encode(header.transactionID) }
    public var publicKeyHashBase64: String { Data(header.publicKeyHash).base64EncodedString() }

    /// Decodes a whole `PKPaymentToken` (with `paymentData` inside) or a bare `paymentData`.
    public init(json bytes: [UInt8]) throws(PaymentTokenError) {
        guard bytes.count <= Self.maximumEncodedSize else {
            throw .malformed("the token is \(bytes.count) bytes; at most \(Self.maximumEncodedSize) are accepted")
        }
        let root: TokenJSON.Object
        do {
            root = try TokenJSON.object(bytes)
        } catch {
            throw .malformed("the token is not a JSON object (\(error.reason) at byte \(error.offset))")
        }
        var paymentData = root
        if root["version"] == nil, let inner = root["paymentData"] {
            guard case .object(let object) = inner else {
                throw .malformed("paymentData is not a JSON object (a base64 paymentData must be decoded to JSON first)")
            }
            paymentData = object
        }
        guard case .string(let versionText)? = paymentData["version"] else { throw .malformed("version is missing or not a string") }
        guard let version = PaymentTokenVersion(rawValue: String(decoding: versionText, as: UTF8.self)) else {
            throw PaymentTokenError(
                .unsupportedVersion,
                "version \"\(String(decoding: versionText.prefix(32), as: UTF8.self))\" is not supported; "
                    + "Paywarden decrypts EC_v1 and RSA_v1"
            )
        }
        self.version = version
        data = try Self.base64(paymentData["data"], "data", maximum: Self.maximumDataSize)
        guard data.count > 16 else { throw .malformed("data is shorter than a GCM tag") }
        signature = try Self.base64(paymentData["signature"], "signature", maximum: Self.maximumSignatureSize)
        guard case .object(let header)? = paymentData["header"] else { throw .malformed("header is missing or not an object") }

        let publicKeyHash = try Self.base64(header["publicKeyHash"], "header.publicKeyHash", maximum: 32)
        guard publicKeyHash.count == 32 else { throw .malformed("header.publicKeyHash is not a SHA-256 hash") }
        // Both are exactly 32 bytes. The signed content joins the fields without lengths, so a
        // variable split between transactionId and applicationData would let one signed token
        // pass as several transactions (and defeat replay protection).
        let transactionID = try Self.hex(header["transactionId"], "header.transactionId", maximum: 32)
        guard transactionID.count == 32 else { throw .malformed("header.transactionId is not 32 bytes (64 hex digits)") }
        let applicationData = try header["applicationData"].map { value throws(PaymentTokenError) in
            try Self.hex(value, "header.applicationData", maximum: 32)
        }
        if let applicationData, applicationData.count != 32 {
            throw .malformed("header.applicationData is not a SHA-256 hash (64 hex digits)")
        }
        var ephemeralPublicKey: [UInt8]?
        var wrappedKey: [UInt8]?
        switch version {
        case .ecV1:
            guard header["wrappedKey"] == nil else { throw .malformed("an EC_v1 header carries wrappedKey") }
            ephemeralPublicKey = try Self.base64(header["ephemeralPublicKey"], "header.ephemeralPublicKey", maximum: 256)
        case .rsaV1:
            guard header["ephemeralPublicKey"] == nil else { throw .malformed("an RSA_v1 header carries ephemeralPublicKey") }
            wrappedKey = try Self.base64(header["wrappedKey"], "header.wrappedKey", maximum: 1024)
        }
        self.header = Header(
            ephemeralPublicKey: ephemeralPublicKey, wrappedKey: wrappedKey, publicKeyHash: publicKeyHash,
            transactionID: transactionID, applicationData: applicationData)
    }

    /// What the signature covers: ephemeralPublicKey (or wrappedKey) ‖ data ‖ transactionId ‖
    /// applicationData, all decoded.
    var signedContent: [UInt8] {
        (header.ephemeralPublicKey ?? header.wrappedKey ?? []) + data + header.transactionID + (header.applicationData ?? [])
    }

    private static func base64(_ value: TokenJSON.Value?, _ name: String, maximum: Int) throws(PaymentTokenError) -> [UInt8] {
        guard case .string(let text)? = value else { throw .malformed("\(name) is missing or not a string") }
        guard text.count <= (maximum + 2) / 3 * 4 else { throw .malformed("\(name) is longer than \(maximum) bytes") }
        // Foundation's decoder is strict: no whitespace, no URL alphabet, correct padding.
        guard let decoded = Data(base64Encoded: Data(text)), !decoded.isEmpty else { throw .malformed("\(name) is not valid Base64") }
        return Array(decoded)
    }

    private static func hex(_ value: TokenJSON.Value?, _ name: String, maximum: Int) throws(PaymentTokenError) -> [UInt8] {
        guard case .string(let text)? = value else { throw .malformed("\(name) is missing or not a string") }
        guard text.count <= maximum * 2 else { throw .malformed("\(name) is not hex of at most \(maximum) bytes") }
        guard let bytes = Hex.decode(utf8: text) else { throw .malformed("\(name) is not valid hex") }
        return bytes
    }
}
