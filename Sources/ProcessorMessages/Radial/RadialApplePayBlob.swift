/// An Apple Pay `paymentData` as Radial carries it, in `WalletPaymentInformation` or a
/// `DecryptBlobRequest`. Base64 values may be wrapped over lines (Radial's own sample is); XML
/// whitespace inside them is removed.
public typealias RadialApplePayBlob = ApplePayPaymentData

extension ApplePayPaymentData {
    /// Radial's six fields, each within Apple's bounds: the transaction id (named `transactionIdName`),
    /// ephemeral public key and public key hash from `header` at `headerPath`, the version, data and
    /// signature from `body` at `bodyPath`. Base64 is the caller's to check: the formats differ on
    /// which fields must be.
    static func radial(
        header: ProcessorXML.Element, headerPath: String, transactionIdName: String, body: ProcessorXML.Element, bodyPath: String
    ) throws(ProcessorMessageError) -> RadialApplePayBlob {
        // Read in Radial's order, so the first field at fault is the one reported.
        let transactionId = try radialField(header, transactionIdName, path: headerPath, range: 1...CnpSchema.applePayTransactionIdMaximum)
        let ephemeralPublicKey = try radialField(
            header, "EphemeralPublicKey", path: headerPath, range: 1...CnpSchema.applePayEphemeralPublicKeyMaximum)
        let publicKeyHash = try radialField(header, "PublicKeyHash", path: headerPath, range: 1...CnpSchema.applePayPublicKeyHashMaximum)
        let version = try radialField(body, "Version", path: bodyPath, range: CnpSchema.applePayVersionRange)
        let data = try radialField(body, "Data", path: bodyPath, range: 1...CnpSchema.applePayDataMaximum)
        let signature = try radialField(body, "Signature", path: bodyPath, range: 1...CnpSchema.applePaySignatureMaximum)
        return RadialApplePayBlob(
            data: data, ephemeralPublicKey: ephemeralPublicKey, publicKeyHash: publicKeyHash, transactionId: transactionId,
            signature: signature, version: version)
    }

    /// Reads and checks one field. Limits are cnpAPI's applepayType limits (Radial publishes none for
    /// these fields; they are the same Apple values).
    private static func radialField(
        _ parent: ProcessorXML.Element, _ name: String, path: String, range: ClosedRange<Int>
    ) throws(ProcessorMessageError) -> String {
        let reader = RadialSchema.reader
        let child = try reader.requiredChild(parent, name, path: path)
        let value = FieldRules.withoutWhitespace(try reader.value(child, path: "\(path)/\(name)"))
        try reader.rules.length(value, "\(path)/\(name)", min: range.lowerBound, max: range.upperBound)
        return value
    }

    static func checkRadialBase64(_ value: String, _ field: String) throws(ProcessorMessageError) {
        guard FieldRules.isBase64(value) else {
            throw ProcessorMessageError(.radial, .invalidFormat, field: field, "\(field) must be Base64")
        }
    }
}
