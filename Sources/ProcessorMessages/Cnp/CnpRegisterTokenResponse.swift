import Foundation

/// A `registerTokenResponse` to build (cnpTransaction_v12.10.xsd; litleTransaction_v10.8.xsd).
///
/// The schema's content is an `xs:all` of `cnpTxnId`, `cnpToken`?, `bin`?, `type`?,
/// `eCheckAccountSuffix`?, `response`, `message`, `responseTime`, `applepayResponse`?,
/// `androidpayResponse`?, `accountRangeId`?; this builder writes them in that listed order. The XSD
/// has no `orderId` in `registerTokenResponse` (in either namespace), so none is written even when
/// the request carried one.
public struct CnpRegisterTokenResponse: Sendable, Hashable {
    public var attributes: CnpTransactionAttributes
    /// `cnpTxnId`/`litleTxnId`: cnpIdType, an xs:long of at most 19 digits.
    public var transactionId: UInt64
    public var response: CnpTokenResponseCode
    public var responseTime: Date
    /// The high-value token, when one was issued (801/802).
    public var token: String?
    public var bin: String?
    /// A `methodOfPaymentTypeEnum` code (VI, MC, AX…).
    public var type: String?
    public var applePay: CnpApplePayResponse?

    public init(
        attributes: CnpTransactionAttributes, transactionId: UInt64, response: CnpTokenResponseCode, responseTime: Date,
        token: String? = nil, bin: String? = nil, type: String? = nil, applePay: CnpApplePayResponse? = nil
    ) {
        self.attributes = attributes
        self.transactionId = transactionId
        self.response = response
        self.responseTime = responseTime
        self.token = token
        self.bin = bin
        self.type = type
        self.applePay = applePay
    }

    /// The response element, in the dialect's namespace.
    public func element(_ dialect: CnpDialect) -> ProcessorXML.Element {
        var element = dialect.element("registerTokenResponse")
        attributes.apply(to: &element)
        element.appendChild(dialect.element(dialect.transactionIdName, text: String(transactionId)))
        if let token { element.appendChild(dialect.element(dialect.tokenName, text: token)) }
        if let bin { element.appendChild(dialect.element("bin", text: bin)) }
        if let type { element.appendChild(dialect.element("type", text: type)) }
        element.appendChild(dialect.element("response", text: response.code))
        element.appendChild(dialect.element("message", text: response.message))
        element.appendChild(dialect.element("responseTime", text: XSDateTime.cnp(responseTime)))
        if let applePay { element.appendChild(applePay.element(dialect)) }
        return element
    }
}
