import Foundation

/// A decrypted token: the payload exactly as Apple sent it, and where it came from.
public struct DecryptedPaymentToken: Sendable {
    /// The decrypted JSON, byte for byte: unknown fields are never dropped.
    public let paymentData: [UInt8]
    public let version: PaymentTokenVersion
    public let transactionID: String
    public let publicKeyHash: String
    public let signingTime: Date
    public let keyID: String
    /// Lowercase hex SHA-256 of the merchant identifier.
    public let merchantIdentifierHash: String

    public init(
        paymentData: [UInt8], version: PaymentTokenVersion, transactionID: String, publicKeyHash: String, signingTime: Date,
        keyID: String, merchantIdentifierHash: String
    ) {
        self.paymentData = paymentData
        self.version = version
        self.transactionID = transactionID
        self.publicKeyHash = publicKeyHash
        self.signingTime = signingTime
        self.keyID = keyID
        self.merchantIdentifierHash = merchantIdentifierHash
    }
}
