/// The one transaction of a `cnpOnlineRequest` (cnpOnline_v12.10.xsd `baseRequest`: authentication,
/// then one `transaction` or `recurringTransaction`).
public enum CnpTransaction: Sendable, Hashable {
    case registerToken(CnpRegisterTokenRequest)
    case authorization(CnpPaymentTransaction)
    case sale(CnpPaymentTransaction)
    /// Any other transaction type, kept whole and not interpreted (capture, credit, void…).
    case other(ProcessorXML.Element)

    /// The transaction element's local name.
    public var name: String {
        switch self {
        case .registerToken: "registerTokenRequest"
        case .authorization: "authorization"
        case .sale: "sale"
        case .other(let element): element.name.localName
        }
    }

    static func parse(_ element: ProcessorXML.Element, dialect: CnpDialect) throws(ProcessorMessageError) -> CnpTransaction {
        switch element.name.localName {
        case "registerTokenRequest": .registerToken(try CnpRegisterTokenRequest.parse(element, dialect: dialect))
        case "authorization": .authorization(try CnpPaymentTransaction.parse(element, kind: .authorization, dialect: dialect))
        case "sale": .sale(try CnpPaymentTransaction.parse(element, kind: .sale, dialect: dialect))
        default: .other(element)
        }
    }
}
