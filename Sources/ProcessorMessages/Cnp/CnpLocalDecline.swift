import Foundation

/// Hard declines Paywarden answers itself, without calling the upstream, when an `authorization` or
/// `sale` names a registration ID it cannot redeem (Worldpay lists both as hard declines with these
/// `response`/`message` values; docs/vault.md, "Error codes"), or a Paywarden token it will not use
/// so (cnpAPI's token codes, docs/vault.md, "High-value tokens").
public enum CnpLocalDecline: String, Sendable, Hashable, CaseIterable {
    /// 877: unknown, malformed (fails MOD 10+1), or another organisation's registration ID.
    case invalidRegistrationId = "877"
    /// 878: the registration ID expired (its tombstone is still known).
    case expiredRegistrationId = "878"
    /// 823: the organisation's token can no longer be used (its merchant token was unlinked).
    case tokenInvalid = "823"
    /// 899: the organisation's token may not serve this use (a DPAN's token for a recurring or
    /// merchant-initiated payment); the stable code goes in the message.
    case tokenUseError = "899"

    public var message: String {
        switch self {
        case .invalidRegistrationId: "Invalid Paypage Registration Id"
        case .expiredRegistrationId: "Expired Paypage Registration Id"
        case .tokenInvalid: "Token was invalid"
        case .tokenUseError: "Generic token use error"
        }
    }

    /// The `authorizationResponse`/`saleResponse` element: txn id, orderId, response, responseTime,
    /// message (both schemas list these as required members of the response's `xs:all`). `detail`
    /// (Paywarden's stable code) follows the message in parentheses.
    public func responseElement(
        for transaction: CnpPaymentTransaction, dialect: CnpDialect, transactionId: UInt64, responseTime: Date, detail: String? = nil
    ) -> ProcessorXML.Element {
        let message = detail.map { "\(self.message) (\($0))" } ?? self.message
        var element = dialect.element(transaction.kind.responseName)
        transaction.attributes.apply(to: &element)
        let fields: [(String, String)] =
            transaction.kind == .sale
            ? [
                (dialect.transactionIdName, String(transactionId)), ("response", rawValue), ("orderId", transaction.orderId ?? ""),
                ("responseTime", XSDateTime.cnp(responseTime)), ("message", message),
            ]
            : [
                (dialect.transactionIdName, String(transactionId)), ("orderId", transaction.orderId ?? ""), ("response", rawValue),
                ("responseTime", XSDateTime.cnp(responseTime)), ("message", message),
            ]
        for (name, value) in fields { element.appendChild(dialect.element(name, text: value)) }
        return element
    }

    /// The whole response document for a request Paywarden declines locally.
    public func response(
        to request: CnpOnlineRequest, transactionId: UInt64, responseTime: Date, detail: String? = nil
    ) throws(ProcessorMessageError) -> ProcessorXML.Document {
        switch request.transaction {
        case .authorization(let transaction), .sale(let transaction):
            let element = responseElement(
                for: transaction, dialect: request.dialect, transactionId: transactionId, responseTime: responseTime, detail: detail)
            return CnpOnlineResponse.envelope(dialect: request.dialect, version: request.version, transactions: [element])
        case .registerToken, .other:
            throw ProcessorMessageError(
                .cnpAPI, .unsupportedTransaction, field: request.transaction.name,
                "local declines answer authorization and sale only")
        }
    }
}
