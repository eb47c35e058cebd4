import Foundation

/// One CMS SignerInfo with its signed attributes decoded.
struct SignerInfo: Sendable {
    /// The issuer Name (DER) and serial number (INTEGER content) of the signing certificate.
    let issuer: [UInt8]
    let serialNumber: [UInt8]
    let digestAlgorithm: [UInt8]
    let signatureAlgorithm: [UInt8]
    let signature: [UInt8]
    /// The signed attributes re-encoded as the DER SET the signature covers.
    let signedAttributes: [UInt8]
    let contentType: [UInt8]?
    let messageDigest: [UInt8]?
    let signingTime: Date?

    init(_ node: BERNode, in bytes: [UInt8]) throws(BERError) {
        let fields = try node.children(in: bytes)
        guard node.isUniversal(BERNode.sequence), fields.count >= 6 else {
            throw BERError("a SignerInfo is not a SEQUENCE of its six fields")
        }
        let sid = try fields[1].children(in: bytes)
        guard fields[1].isUniversal(BERNode.sequence), sid.count == 2,
            sid[0].isUniversal(BERNode.sequence), sid[1].isUniversal(BERNode.integer)
        else { throw BERError("the signer is not identified by issuer and serial number") }
        issuer = try sid[0].reencoded(identifier: 0x30, in: bytes)
        serialNumber = Array(bytes[sid[1].content])
        // X.690 §8.3.2 (BER as well as DER): an INTEGER's first nine bits are never all zeros or all
        // ones. The signature does not cover the signer's identifier, so a padded serial is an
        // alteration in transit, never Apple's encoding; accepted, each padding would look like
        // another signer.
        guard let first = serialNumber.first else { throw BERError("the signer's serial number is empty") }
        if serialNumber.count > 1, (first == 0x00 && serialNumber[1] & 0x80 == 0) || (first == 0xFF && serialNumber[1] & 0x80 != 0) {
            throw BERError("the signer's serial number is not minimally encoded (X.690 §8.3.2)")
        }

        guard fields[2].isUniversal(BERNode.sequence), let digestOID = try fields[2].children(in: bytes).first else {
            throw BERError("bad digest algorithm")
        }
        digestAlgorithm = Array(bytes[digestOID.content])

        let attributes = fields[3]
        guard attributes.isContext(0), attributes.isConstructed else {
            throw BERError("the signer has no signed attributes, so the content is not bound to the signature")
        }
        // [0] IMPLICIT SET OF Attribute: the signature covers it with the SET tag (RFC 5652 §5.4).
        signedAttributes = try attributes.reencoded(identifier: 0x31, in: bytes)

        guard fields[4].isUniversal(BERNode.sequence), let algorithmOID = try fields[4].children(in: bytes).first else {
            throw BERError("bad signature algorithm")
        }
        signatureAlgorithm = Array(bytes[algorithmOID.content])
        guard fields[5].isUniversal(BERNode.octetString) else { throw BERError("the signature is not an OCTET STRING") }
        signature = try fields[5].octets(in: bytes)

        var contentType: [UInt8]?
        var messageDigest: [UInt8]?
        var signingTime: Date?
        for attribute in try attributes.children(in: bytes) {
            let parts = try attribute.children(in: bytes)
            guard attribute.isUniversal(BERNode.sequence), parts.count == 2,
                parts[0].isUniversal(BERNode.objectIdentifier), parts[1].isUniversal(BERNode.set)
            else { throw BERError("a signed attribute is malformed") }
            let type = Array(bytes[parts[0].content])
            guard
                type == CMSObjectIdentifier.contentType || type == CMSObjectIdentifier.messageDigest
                    || type == CMSObjectIdentifier.signingTime
            else { continue }  // CMSAlgorithmProtection and others are covered by the signature
            // RFC 5652 §11: each of these has exactly one value and occurs once.
            let values = try parts[1].children(in: bytes)
            guard values.count == 1 else { throw BERError("a signed attribute must have exactly one value") }
            let value = values[0]
            if type == CMSObjectIdentifier.contentType {
                guard contentType == nil, value.isUniversal(BERNode.objectIdentifier) else {
                    throw BERError("bad or repeated content-type attribute")
                }
                contentType = Array(bytes[value.content])
            } else if type == CMSObjectIdentifier.messageDigest {
                guard messageDigest == nil, value.isUniversal(BERNode.octetString) else {
                    throw BERError("bad or repeated message-digest attribute")
                }
                messageDigest = try value.octets(in: bytes)
            } else {
                guard signingTime == nil else { throw BERError("repeated signing-time attribute") }
                signingTime = try Self.time(value, in: bytes)
            }
        }
        self.contentType = contentType
        self.messageDigest = messageDigest
        self.signingTime = signingTime
    }

    /// UTCTime (YYMMDDHHMMSSZ) or GeneralizedTime (YYYYMMDDHHMMSSZ), UTC only.
    private static func time(_ node: BERNode, in bytes: [UInt8]) throws(BERError) -> Date {
        let text = Array(bytes[node.content])
        let digits: [UInt8]
        let year: Int
        if node.isUniversal(BERNode.utcTime), text.count == 13 {
            digits = Array(text[0..<12])
            guard let yy = Self.number(digits[0..<2]) else { throw BERError("bad signing time") }
            year = yy < 50 ? 2000 + yy : 1900 + yy  // RFC 5280 §4.1.2.5.1
        } else if node.isUniversal(BERNode.generalizedTime), text.count == 15 {
            digits = Array(text[2..<14])
            guard let yyyy = Self.number(text[0..<4]) else { throw BERError("bad signing time") }
            year = yyyy
        } else {
            throw BERError("the signing time is neither UTCTime nor GeneralizedTime in UTC")
        }
        guard text.last == UInt8(ascii: "Z"),
            let month = number(digits[2..<4]), let day = number(digits[4..<6]), let hour = number(digits[6..<8]),
            let minute = number(digits[8..<10]), let second = number(digits[10..<12]),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { throw BERError("bad signing time") }
        // Days from the civil date (proleptic Gregorian), without Foundation's costly Calendar.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for digit in digits {
            guard (0x30...0x39).contains(digit) else { return nil }
            value = value * 10 + Int(digit - 0x30)
        }
        return value
    }
}
