import SwiftASN1

/// The object identifiers of Apple Pay certificates, defined once: verification, custody and the
/// test PKI all use these.
public enum ApplePayOID {
    /// The merchant identifier hash (a DER UTF8String of 64 hex digits) in processing and
    /// identity certificates.
    public static let merchantIdentifierHash: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 32]
    /// Marks the leaf certificate that signs payment tokens.
    public static let paymentTokenSigningLeaf: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 29]
    /// Marks the Apple Worldwide Developer Relations intermediate that issues the signing leaf.
    public static let paymentTokenIntermediate: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 14]
    /// The subject attribute holding the merchant identifier (UID, RFC 4519).
    public static let userID: ASN1ObjectIdentifier = [0, 9, 2342, 19200300, 100, 1, 1]
}
