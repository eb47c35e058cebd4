/// An Apple Pay `paymentData` as Radial carries it, in `WalletPaymentInformation` or a
/// `DecryptBlobRequest`. Base64 values may be wrapped over lines (Radial's own sample is); XML
/// whitespace inside them is removed.
public struct RadialApplePayBlob: Sendable, Hashable {
    public var transactionId: String
    public var ephemeralPublicKey: String
    public var publicKeyHash: String
    public var version: String
    public var data: String
    public var signature: String

    public init(transactionId: String, ephemeralPublicKey: String, publicKeyHash: String, version: String, data: String, signature: String)
    {
        self.transactionId = transactionId
        self.ephemeralPublicKey = ephemeralPublicKey
        self.publicKeyHash = publicKeyHash
        self.version = version
        self.data = data
        self.signature = signature
    }

    /// The token as Apple's `paymentData` JSON (docs/apple-pay.md, "The token"), for the Apple Pay module.
    public var paymentDataJSON: [UInt8] {
        CnpApplePay(
            data: data, ephemeralPublicKey: ephemeralPublicKey, publicKeyHash: publicKeyHash,
            transactionId: transactionId, signature: signature, version: version
        ).paymentDataJSON
    }

    /// Reads and checks one field. Limits are cnpAPI's applepayType limits (Radial publishes none for
    /// these fields; they are the same Apple values).
    static func field(
        _ parent: ProcessorXML.Element, _ name: String, path: String, range: ClosedRange<Int>
    ) throws(ProcessorMessageError) -> String {
        let reader = RadialSchema.reader
        let child = try reader.requiredChild(parent, name, path: path)
        let value = FieldRules.withoutWhitespace(try reader.value(child, path: "\(path)/\(name)"))
        try reader.rules.length(value, "\(path)/\(name)", min: range.lowerBound, max: range.upperBound)
        return value
    }

    static func checkBase64(_ value: String, _ field: String) throws(ProcessorMessageError) {
        guard FieldRules.isBase64(value) else {
            throw ProcessorMessageError(.radial, .invalidFormat, field: field, "\(field) must be Base64")
        }
    }
}
