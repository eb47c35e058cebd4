import Foundation

/// Radial's requests as an app or a merchant's server writes them, for the relay's tests with and
/// without a socket.
public enum RadialTestMessages {
    public static let namespace = "http://api.gsicommerce.com/schema/checkout/1.0"

    public static func decryptBlobRequest(_ token: [UInt8]) throws -> [UInt8] {
        let blob = try PaymentTokenFields(token)
        return Array(
            (#"<DecryptBlobRequest xmlns="\#(Self.namespace)"><AlgorithmVersion>1</AlgorithmVersion><EncryptionHeader>"#
                + "<EphemeralPublicKey>\(blob.ephemeralPublicKey)</EphemeralPublicKey><TransactionId>\(blob.transactionId)</TransactionId>"
                + "<PublicKeyHash>\(blob.publicKeyHash)</PublicKeyHash></EncryptionHeader><Version>\(blob.version)</Version>"
                + "<Data>\(blob.data)</Data><Signature>\(blob.signature)</Signature></DecryptBlobRequest>").utf8)
    }

    /// The digital-wallet authorization of seed 003's element table, around `token`.
    public static func walletAuthorization(_ token: [UInt8], orderID: String = "ORDER-0005", omitting omitted: String? = nil) throws
        -> [UInt8]
    {
        let blob = try PaymentTokenFields(token)
        let address =
            "<Line1>123 Main St</Line1><City>King of Prussia</City><MainDivision>PA</MainDivision><CountryCode>US</CountryCode>"
            + "<PostalCode>19406</PostalCode>"
        let elements: [(String, String)] = [
            (
                "WalletPaymentInformation",
                "<ApplePayTransactionId>\(blob.transactionId)</ApplePayTransactionId>"
                    + "<EphemeralPublicKey>\(blob.ephemeralPublicKey)</EphemeralPublicKey>"
                    + "<PublicKeyHash>\(blob.publicKeyHash)</PublicKeyHash>"
                    + "<Version>\(blob.version)</Version><Data>\(blob.data)</Data><Signature>\(blob.signature)</Signature>"
            ),
            ("OrderId", orderID), ("Amount", "14.99"), ("BillingFirstName", "Jane"), ("BillingLastName", "Doe"),
            ("BillingPhoneNo", "6101234567"), ("BillingAddress", address), ("CustomerEmail", "jane@example.com"),
            ("CustomerIPAddress", "203.0.113.7"), ("ShipToFirstName", "Jane"), ("ShipToLastName", "Doe"),
            ("ShippingAddress", address), ("SchemaVersion", "1.2"), ("PaymentId", "b33j9ynrb400"),
        ]
        var text = #"<?xml version="1.0" encoding="UTF-8"?><CreditCardAuthRequest xmlns="\#(Self.namespace)" requestId="REQ-1">"#
        for (name, value) in elements where name != omitted {
            text += name == "Amount" ? #"<Amount currencyCode="USD">\#(value)</Amount>"# : "<\(name)>\(value)</\(name)>"
        }
        return Array((text + "</CreditCardAuthRequest>").utf8)
    }

    /// Seed 003's second step: the app's card-not-present `CreditCardAuthRequest` with the
    /// high-value token `decryptblob` answered in `PaymentContext` (`isToken="true"`) and the
    /// expiry it answered, the rest as in the wallet request.
    public static func tokenAuthorization(_ token: String, isToken: String = "true", orderID: String = "ORDER-0007") -> [UInt8] {
        let address =
            "<Line1>123 Main St</Line1><City>King of Prussia</City><MainDivision>PA</MainDivision><CountryCode>US</CountryCode>"
            + "<PostalCode>19406</PostalCode>"
        let elements: [(String, String)] = [
            (
                "PaymentContext",
                "<OrderId>\(orderID)</OrderId><PaymentAccountUniqueId isToken=\"\(isToken)\">\(token)</PaymentAccountUniqueId>"
            ),
            ("ExpirationDate", "2029-12"), ("Amount", "14.99"), ("BillingFirstName", "Jane"), ("BillingLastName", "Doe"),
            ("BillingPhoneNo", "6101234567"), ("BillingAddress", address), ("CustomerEmail", "jane@example.com"),
            ("CustomerIPAddress", "203.0.113.7"), ("ShipToFirstName", "Jane"), ("ShipToLastName", "Doe"),
            ("ShippingAddress", address), ("isRequestToCorrectCVVOrAVSError", "false"), ("SchemaVersion", "1.2"),
            ("PaymentId", "b33j9ynrb401"),
        ]
        var text = #"<?xml version="1.0" encoding="UTF-8"?><CreditCardAuthRequest xmlns="\#(Self.namespace)" requestId="REQ-2">"#
        for (name, value) in elements {
            text += name == "Amount" ? #"<Amount currencyCode="USD">\#(value)</Amount>"# : "<\(name)>\(value)</\(name)>"
        }
        return Array((text + "</CreditCardAuthRequest>").utf8)
    }
}
