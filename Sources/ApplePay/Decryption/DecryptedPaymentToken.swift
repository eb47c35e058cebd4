import Foundation

/// A decrypted token: the payload exactly as Apple sent it, read once, and where it came from.
public struct DecryptedPaymentToken: Sendable {
    /// The decrypted JSON, byte for byte: unknown fields are never dropped.
    public let paymentData: [UInt8]
    /// The payload's fields, read when it was decrypted so no caller reads the bytes again; nil when
    /// the payload is not a JSON object (the decrypt endpoint still answers it as it is).
    public let payment: DecryptedPayment?
    public let version: PaymentTokenVersion
    public let transactionID: String
    public let publicKeyHash: String
    public let signingTime: Date
    public let keyID: String
    /// Lowercase hex SHA-256 of the merchant identifier.
    public let merchantIdentifierHash: String

    /// Refuses a multi-merchant payload whose `authenticationResponses` cannot be relied on
    /// (``DecryptedPayment/read(_:)``): the decrypt endpoint never answers one, nor the vault keeps it.
    public init(
        paymentData: [UInt8], version: PaymentTokenVersion, transactionID: String, publicKeyHash: String, signingTime: Date,
        keyID: String, merchantIdentifierHash: String
    ) throws(PaymentTokenError) {
        self.paymentData = paymentData
        self.payment = try DecryptedPayment.read(paymentData)
        self.version = version
        self.transactionID = transactionID
        self.publicKeyHash = publicKeyHash
        self.signingTime = signingTime
        self.keyID = keyID
        self.merchantIdentifierHash = merchantIdentifierHash
    }
}
