/// cnpAPI token response codes (docs/vault.md, "High-value tokens"; Worldpay's token response code table), with the
/// message cnpAPI pairs with each. 801 and 802's wording is Worldpay's (seed 002 shows 801's); the
/// error codes' wording follows the same table's descriptions.
public struct CnpTokenResponseCode: Sendable, Hashable, CustomStringConvertible {
    public let code: String
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public static let registered = CnpTokenResponseCode(code: "801", message: "Account number was successfully registered")
    public static let previouslyRegistered = CnpTokenResponseCode(code: "802", message: "Account number was previously registered")
    public static let invalidAccountNumber = CnpTokenResponseCode(code: "820", message: "Credit card number was invalid")
    public static let merchantNotAuthorized = CnpTokenResponseCode(code: "821", message: "Merchant is not authorized for tokens")
    public static let tokenNotFound = CnpTokenResponseCode(code: "822", message: "Token was not found")
    public static let tokenInvalid = CnpTokenResponseCode(code: "823", message: "Token was invalid")
    public static let registrationError = CnpTokenResponseCode(code: "898", message: "Generic token registration error")
    public static let useError = CnpTokenResponseCode(code: "899", message: "Generic token use error")

    public var description: String { "\(code) \(message)" }
}
