/// An Apple Pay `paymentData` posted inside cnpAPI (`applepayType`): `data`, `header`
/// {`applicationData`?, `ephemeralPublicKey`, `publicKeyHash`, `transactionId`}, `signature`,
/// `version`, in that order.
public struct CnpApplePay: Sendable, Hashable {
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

    static func parse(_ element: ProcessorXML.Element, path: String, dialect: CnpDialect) throws(ProcessorMessageError) -> CnpApplePay {
        let reader = dialect.reader
        try reader.checkSequence(element, ["data", "header", "signature", "version"], optional: [], path: path)
        let header = try reader.requiredChild(element, "header", path: path)
        let headerPath = "\(path)/header"
        try reader.checkSequence(
            header, ["applicationData", "ephemeralPublicKey", "publicKeyHash", "transactionId"], optional: ["applicationData"],
            path: headerPath
        )
        return CnpApplePay(
            data: try reader.requiredValue(element, "data", path: path, max: CnpSchema.applePayDataMaximum),
            applicationData: try reader.optionalValue(
                header, "applicationData", path: headerPath, max: CnpSchema.applePayApplicationDataMaximum),
            ephemeralPublicKey: try reader.requiredValue(
                header, "ephemeralPublicKey", path: headerPath, max: CnpSchema.applePayEphemeralPublicKeyMaximum),
            publicKeyHash: try reader.requiredValue(header, "publicKeyHash", path: headerPath, max: CnpSchema.applePayPublicKeyHashMaximum),
            transactionId: try reader.requiredValue(header, "transactionId", path: headerPath, max: CnpSchema.applePayTransactionIdMaximum),
            signature: try reader.requiredValue(element, "signature", path: path, max: CnpSchema.applePaySignatureMaximum),
            version: try reader.requiredValue(
                element, "version", path: path,
                min: CnpSchema.applePayVersionRange.lowerBound, max: CnpSchema.applePayVersionRange.upperBound)
        )
    }
}
