/// `applepayResponse` on a `registerTokenResponse`: the decrypted payload's fields, in the schema's
/// sequence (cnpTransaction_v12.10.xsd: applicationPrimaryAccountNumber?, applicationExpirationDate?,
/// currencyCode?, transactionAmount?, cardholderName?, deviceManufacturerIdentifier?,
/// paymentDataType?, onlinePaymentCryptogram?, eciIndicator?).
///
/// `applicationPrimaryAccountNumber` is deliberately absent from this type: Worldpay's example omits
/// it (docs/vault.md, "cnpAPI registerTokenRequest"), so the DPAN can never be put on the wire through here. The cryptogram is
/// masked in ``description``.
public struct CnpApplePayResponse: Sendable, Hashable, CustomStringConvertible {
    public var applicationExpirationDate: String?
    public var currencyCode: String?
    public var transactionAmount: String?
    public var cardholderName: String?
    public var deviceManufacturerIdentifier: String?
    public var paymentDataType: String?
    public var onlinePaymentCryptogram: String?
    public var eciIndicator: String?

    public init(
        applicationExpirationDate: String? = nil, currencyCode: String? = nil, transactionAmount: String? = nil,
        cardholderName: String? = nil, deviceManufacturerIdentifier: String? = nil, paymentDataType: String? = nil,
        onlinePaymentCryptogram: String? = nil, eciIndicator: String? = nil
    ) {
        self.applicationExpirationDate = applicationExpirationDate
        self.currencyCode = currencyCode
        self.transactionAmount = transactionAmount
        self.cardholderName = cardholderName
        self.deviceManufacturerIdentifier = deviceManufacturerIdentifier
        self.paymentDataType = paymentDataType
        self.onlinePaymentCryptogram = onlinePaymentCryptogram
        self.eciIndicator = eciIndicator
    }

    func element(_ dialect: CnpDialect) -> ProcessorXML.Element {
        var element = dialect.element("applepayResponse")
        let fields: [(String, String?)] = [
            ("applicationExpirationDate", applicationExpirationDate), ("currencyCode", currencyCode),
            ("transactionAmount", transactionAmount), ("cardholderName", cardholderName),
            ("deviceManufacturerIdentifier", deviceManufacturerIdentifier), ("paymentDataType", paymentDataType),
            ("onlinePaymentCryptogram", onlinePaymentCryptogram), ("eciIndicator", eciIndicator),
        ]
        for case (let name, let value?) in fields { element.appendChild(dialect.element(name, text: value)) }
        return element
    }

    public var description: String {
        let cryptogram = onlinePaymentCryptogram.map { "<masked \($0.count) characters>" } ?? "nil"
        return "CnpApplePayResponse(expiration: \(applicationExpirationDate == nil ? "nil" : "<hidden>"), "
            + "currency: \(currencyCode ?? "nil"), amount: \(transactionAmount ?? "nil"), "
            + "paymentDataType: \(paymentDataType ?? "nil"), cryptogram: \(cryptogram), eci: \(eciIndicator ?? "nil"))"
    }
}
