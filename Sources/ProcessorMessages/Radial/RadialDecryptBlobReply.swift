/// `DecryptBlobReply`, Paywarden's answer to a `DecryptBlobRequest`. Radial does not publish this
/// reply's schema, so the names follow Radial's own vocabulary (Payment-Datatypes-1.0.xsd,
/// Payment-Service-CreditCardAuth-1.0.xsd), in Radial's namespace:
///
///     <DecryptBlobReply xmlns="http://api.gsicommerce.com/schema/checkout/1.0">
///       <PaymentAccountUniqueId isToken="true">high-value token</PaymentAccountUniqueId>
///       <ExpirationDate>2025-12</ExpirationDate>            (xs:gYearMonth, as in CreditCardAuthRequest)
///       <TenderType>VC</TenderType>?                        (TenderTypeType, from the BIN)
///       <CurrencyCode>840</CurrencyCode>?                   (Apple's ISO 4217 numeric code, as decrypted)
///       <TransactionAmount>1000</TransactionAmount>?        (Apple's minor units, as decrypted)
///       <CardholderName>…</CardholderName>?
///       <DeviceManufacturerIdentifier>…</DeviceManufacturerIdentifier>?
///       <PaymentDataType>3DSecure</PaymentDataType>?
///       <ECI>07</ECI>?                                      (SecureVerificationDataType's name for it)
///       <ApplePayTransactionId>…</ApplePayTransactionId>?   (WalletPaymentInformation's name for it)
///     </DecryptBlobReply>
///
/// The reply goes to the app that asked (seed 003: "iOS makes a Decrypt Request API call"), and the
/// client never sees a DPAN or a cryptogram (docs/processors.md): so there is no field for either, the
/// account is the high-value token with `isToken="true"`, exactly as a `CreditCardAuthReply` names it.
public struct RadialDecryptBlobReply: Sendable, Hashable {
    public var token: String
    /// Apple's `applicationExpirationDate`, YYMMDD.
    public var expirationYYMMDD: String
    public var tenderType: String?
    public var currencyCode: String?
    public var transactionAmount: String?
    public var cardholderName: String?
    public var deviceManufacturerIdentifier: String?
    public var paymentDataType: String?
    public var eci: String?
    public var applePayTransactionId: String?

    public init(
        token: String, expirationYYMMDD: String, tenderType: String? = nil, currencyCode: String? = nil,
        transactionAmount: String? = nil, cardholderName: String? = nil, deviceManufacturerIdentifier: String? = nil,
        paymentDataType: String? = nil, eci: String? = nil, applePayTransactionId: String? = nil
    ) {
        self.token = token
        self.expirationYYMMDD = expirationYYMMDD
        self.tenderType = tenderType
        self.currencyCode = currencyCode
        self.transactionAmount = transactionAmount
        self.cardholderName = cardholderName
        self.deviceManufacturerIdentifier = deviceManufacturerIdentifier
        self.paymentDataType = paymentDataType
        self.eci = eci
        self.applePayTransactionId = applePayTransactionId
    }

    public func document() throws(ProcessorMessageError) -> ProcessorXML.Document {
        let rules = FieldRules(format: .radial)
        try rules.digits(expirationYYMMDD, "ExpirationDate", count: 6...6)
        try rules.length(token, "PaymentAccountUniqueId", min: 1, max: RadialSchema.accountUniqueIdRange.upperBound)
        var root = RadialSchema.element("DecryptBlobReply")
        root.namespaceDeclarations = [.init(prefix: nil, namespaceURI: RadialSchema.namespaceURI)]
        var account = RadialSchema.element("PaymentAccountUniqueId", text: token)
        account.setAttribute("isToken", value: "true")
        root.appendChild(account)
        let expiration = "20\(expirationYYMMDD.prefix(2))-\(expirationYYMMDD.dropFirst(2).prefix(2))"
        root.appendChild(RadialSchema.element("ExpirationDate", text: expiration))
        let optional: [(String, String?)] = [
            ("TenderType", tenderType), ("CurrencyCode", currencyCode), ("TransactionAmount", transactionAmount),
            ("CardholderName", cardholderName), ("DeviceManufacturerIdentifier", deviceManufacturerIdentifier),
            ("PaymentDataType", paymentDataType), ("ECI", eci), ("ApplePayTransactionId", applePayTransactionId),
        ]
        for case (let name, let value?) in optional { root.appendChild(RadialSchema.element(name, text: value)) }
        return ProcessorXML.Document(declaration: .init(), root: root)
    }
}
