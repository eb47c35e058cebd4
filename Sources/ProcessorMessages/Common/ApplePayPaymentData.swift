/// An Apple Pay `paymentData` as a processor message carries it: `data`, `header`
/// {`applicationData`?, `ephemeralPublicKey`, `publicKeyHash`, `transactionId`}, `signature`,
/// `version`. cnpAPI's `applepayType` (``CnpApplePay``) and Radial's wallet and decrypt-blob
/// fields (``RadialApplePayBlob``) both hold one; Radial's has no `applicationData`.
public struct ApplePayPaymentData: Sendable, Hashable {
    public var data: String
    public var applicationData: String?
    public var ephemeralPublicKey: String
    public var publicKeyHash: String
    public var transactionId: String
    public var signature: String
    public var version: String

    public init(
        data: String, applicationData: String? = nil, ephemeralPublicKey: String, publicKeyHash: String,
        transactionId: String, signature: String, version: String
    ) {
        self.data = data
        self.applicationData = applicationData
        self.ephemeralPublicKey = ephemeralPublicKey
        self.publicKeyHash = publicKeyHash
        self.transactionId = transactionId
        self.signature = signature
        self.version = version
    }

    /// The token as Apple's `paymentData` JSON (docs/apple-pay.md, "The token"), for the Apple Pay module to verify.
    public var paymentDataJSON: [UInt8] {
        var header: [ProcessorJSON.Member] = []
        if let applicationData { header.append(.init("applicationData", .string(applicationData))) }
        header.append(.init("ephemeralPublicKey", .string(ephemeralPublicKey)))
        header.append(.init("publicKeyHash", .string(publicKeyHash)))
        header.append(.init("transactionId", .string(transactionId)))
        return ProcessorJSON.object([
            .init("version", .string(version)),
            .init("data", .string(data)),
            .init("signature", .string(signature)),
            .init("header", .object(header)),
        ]).serialized()
    }
}
