/// An Apple Pay `paymentData` posted inside cnpAPI (`applepayType`): `data`, `header`
/// {`applicationData`?, `ephemeralPublicKey`, `publicKeyHash`, `transactionId`}, `signature`,
/// `version`, in that order.
public typealias CnpApplePay = ApplePayPaymentData

extension ApplePayPaymentData {
    /// An `applepay` element of a cnpAPI request in `dialect`.
    static func parse(_ element: ProcessorXML.Element, path: String, dialect: CnpDialect) throws(ProcessorMessageError)
        -> ApplePayPaymentData
    {
        let reader = dialect.reader
        try reader.checkSequence(element, ["data", "header", "signature", "version"], optional: [], path: path)
        let header = try reader.requiredChild(element, "header", path: path)
        let headerPath = "\(path)/header"
        try reader.checkSequence(
            header, ["applicationData", "ephemeralPublicKey", "publicKeyHash", "transactionId"], optional: ["applicationData"],
            path: headerPath
        )
        return ApplePayPaymentData(
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
