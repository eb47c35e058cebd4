/// Radial (formerly GSI Commerce / eBay Enterprise) Payment Service facts, with their sources:
/// - eBayEnterprise/RetailOrderManagement-SDK `Payload/Payment/schema/Payment-Service-CreditCardAuth-1.0.xsd`,
///   `Payment-Datatypes-1.0.xsd`, `Checkout-Datatypes-1.0.xsd`, `Checkout/schema/Checkout-Service-Fault-1.0.xsd`;
/// - docs.radial.com "Digital Wallet Authorization Request" (DW.xml sample with WalletPaymentInformation)
///   and "Card Not Present Authorization Request" (VC.xml sample);
/// - docs/processors.md, "Radial" (seed 003's element table: the lengths below).
enum RadialSchema {
    static let namespaceURI = "http://api.gsicommerce.com/schema/checkout/1.0"

    static var reader: XMLFieldReader { XMLFieldReader(format: .radial, namespaceURI: namespaceURI) }

    static func element(_ localName: String, text: String? = nil) -> ProcessorXML.Element {
        ProcessorXML.Element(name: .init(namespaceURI: namespaceURI, localName: localName), children: text.map { [.text($0)] } ?? [])
    }

    /// `@requestId`: RequestId; the SDK trims it to 40 characters (CreditCardAuthRequest.php setRequestId).
    static let requestIdMaximum = 40
    /// `OrderId`: OrderIdType, 1–20.
    static let orderIdRange = 1...20
    /// Billing/ship-to names: PersonNameType's FirstName/LastName are at most 64.
    static let nameRange = 1...64
    /// Phone numbers: no schema length; 20 characters of digits and `+ - ( ) .` and spaces is Paywarden's cap.
    static let phoneRange = 1...20
    /// PhysicalAddressType: Line1 required, Line2–4 optional, 1–70 each; City 1–40 (docs/processors.md,
    /// "Radial"; the 1.0 XSD said 35); MainDivision 1–35; CountryCode 2–40; PostalCode 1–15.
    static let addressLineRange = 1...70
    static let cityRange = 1...40
    static let mainDivisionRange = 1...35
    static let countryCodeRange = 2...40
    static let postalCodeRange = 1...15
    /// `CustomerEmail`: EmailAddress, 1–70 with an `@` and a `.`.
    static let emailRange = 1...70
    /// `PaymentAccountUniqueId`: AccountUniqueIdType, 1–22.
    static let accountUniqueIdRange = 1...22
    /// Amounts: AmountBaseType, decimal with two fraction digits; 9 integer digits is Paywarden's cap.
    static let amountIntegerDigitsMaximum = 9

    /// The digital-wallet request's top-level elements, in the order the DW sample and the CNP
    /// sequence put them (the wallet block stands where PaymentContext/ExpirationDate are in CNP).
    static let walletRequestOrder = [
        "WalletPaymentInformation", "OrderId", "Amount", "BillingFirstName", "BillingLastName", "BillingPhoneNo",
        "BillingAddress", "CustomerEmail", "CustomerIPAddress", "ShipToFirstName", "ShipToLastName", "ShipToPhoneNo",
        "ShippingAddress", "isRequestToCorrectCVVOrAVSError", "SecureVerificationData", "SchemaVersion",
    ]

    /// The token request's top-level elements: the card-not-present sequence of
    /// Payment-Service-CreditCardAuth-1.0.xsd (PaymentContext, ExpirationDate, …), which the app
    /// builds from `decryptblob`'s answer (seed 003). `CardSecurityCode` is refused before this.
    static let tokenRequestOrder = ["PaymentContext", "ExpirationDate"] + walletRequestOrder.dropFirst(2)

    /// Required in the token request: the wallet request's, the card in `PaymentContext`.
    static let tokenRequestRequired: Set<String> = walletRequestRequired.subtracting(["WalletPaymentInformation", "OrderId"])
        .union(["PaymentContext"])

    /// Required in the wallet request (the 1.0 sequence's required members; ShipToPhoneNo is left
    /// optional because Radial's current samples omit it).
    static let walletRequestRequired: Set<String> = [
        "WalletPaymentInformation", "OrderId", "Amount", "BillingFirstName", "BillingLastName", "BillingPhoneNo",
        "BillingAddress", "CustomerEmail", "CustomerIPAddress", "ShipToFirstName", "ShipToLastName", "ShippingAddress",
    ]

    /// After `isRequestToCorrectCVVOrAVSError` the 1.0 CNP sequence has `SecureVerificationData`?;
    /// later versions append `SchemaVersion`, `PaymentId`, `AuthenticationResult` (CNP sample).
    static let afterSecureVerificationData: Set<String> = ["SchemaVersion", "PaymentId", "AuthenticationResult"]
}
