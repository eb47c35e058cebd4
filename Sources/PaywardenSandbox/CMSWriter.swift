import ApplePay
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// Writes detached CMS SignedData the way Apple's payment-token signatures are written: BER
/// with indefinite lengths around the DER pieces, signed attributes contentType, signingTime
/// (UTCTime) and messageDigest.
enum CMSWriter {
    /// - Parameter serialPadding: zero octets put before the signer's serial number (not minimal: for refusal tests).
    static func signedData(
        content: [UInt8], leaf: ApplePayTestPKI.Leaf, certificates: [[UInt8]], signingTime: Date, twoSigners: Bool, serialPadding: Int = 0
    ) throws -> [UInt8] {
        let signer = try signerInfo(content: content, leaf: leaf, signingTime: signingTime, serialPadding: serialPadding)
        let signers =
            twoSigners
            ? signer + (try signerInfo(content: content, leaf: leaf, signingTime: signingTime, serialPadding: serialPadding)) : signer
        let digestAlgorithms = tlv(0x31, tlv(0x30, tlv(0x06, CMSObjectIdentifier.sha256) + [0x05, 0x00]))
        let encapsulated = indefinite(0x30, tlv(0x06, CMSObjectIdentifier.data))
        let signedData = indefinite(
            0x30,
            tlv(0x02, [1]) + digestAlgorithms + encapsulated
                + indefinite(0xA0, certificates.reduce([], +)) + tlv(0x31, signers))
        return indefinite(0x30, tlv(0x06, CMSObjectIdentifier.signedData) + indefinite(0xA0, signedData))
    }

    private static func signerInfo(content: [UInt8], leaf: ApplePayTestPKI.Leaf, signingTime: Date, serialPadding: Int) throws
        -> [UInt8]
    {
        var issuer = DER.Serializer()
        try issuer.serialize(leaf.certificate.issuer)
        var serial = Array(leaf.certificate.serialNumber.bytes)
        if let first = serial.first, first & 0x80 != 0 { serial.insert(0, at: 0) }
        serial.insert(contentsOf: [UInt8](repeating: 0, count: serialPadding), at: 0)
        let attributes = [
            tlv(0x30, tlv(0x06, CMSObjectIdentifier.contentType) + tlv(0x31, tlv(0x06, CMSObjectIdentifier.data))),
            tlv(0x30, tlv(0x06, CMSObjectIdentifier.signingTime) + tlv(0x31, tlv(0x17, Array(utcTime(signingTime).utf8)))),
            tlv(0x30, tlv(0x06, CMSObjectIdentifier.messageDigest) + tlv(0x31, tlv(0x04, Array(SHA256.hash(data: content))))),
        ].sorted { $0.lexicographicallyPrecedes($1) }  // DER SET OF order
        let signedAttributes = attributes.reduce([], +)
        let covered = tlv(0x31, signedAttributes)
        let algorithm: [UInt8]
        let signature: [UInt8]
        switch leaf.key {
        case .p256(let key):
            algorithm = tlv(0x30, tlv(0x06, CMSObjectIdentifier.ecdsaWithSHA256))
            signature = Array(try key.signature(for: covered).derRepresentation)
        case .rsa(let key):
            algorithm = tlv(0x30, tlv(0x06, CMSObjectIdentifier.sha256WithRSAEncryption) + [0x05, 0x00])
            signature = Array(try key.signature(for: covered, padding: .insecurePKCS1v1_5).rawRepresentation)
        }
        return tlv(
            0x30,
            tlv(0x02, [1]) + tlv(0x30, issuer.serializedBytes + tlv(0x02, serial))
                + tlv(0x30, tlv(0x06, CMSObjectIdentifier.sha256) + [0x05, 0x00]) + tlv(0xA0, signedAttributes)
                + algorithm + tlv(0x04, signature))
    }

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8]
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            length = []
            var remaining = content.count
            while remaining > 0 {
                length.insert(UInt8(remaining & 0xFF), at: 0)
                remaining >>= 8
            }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + content
    }

    static func indefinite(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag, 0x80] + content + [0, 0]
    }

    private static func utcTime(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyMMddHHmmss'Z'"
        return formatter.string(from: date)
    }
}
