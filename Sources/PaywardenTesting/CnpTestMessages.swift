import Foundation

/// cnpAPI requests as a merchant's server writes them (`cnpOnlineRequest`, or `litleOnlineRequest`
/// in the legacy namespace), for the relay's tests with and without a socket.
public enum CnpTestMessages {
    public enum Namespace: String, CaseIterable, Sendable {
        case cnp = "http://www.vantivcnp.com/schema"
        case litle = "http://www.litle.com/schema"

        public var root: String { self == .cnp ? "cnpOnlineRequest" : "litleOnlineRequest" }
        public var tokenElement: String { self == .cnp ? "cnpToken" : "litleToken" }
    }

    /// The request around `transaction`, with the client's `<authentication>`.
    public static func envelope(
        _ namespace: Namespace, user: String = "merchant-server", password: String, merchantId: String = "01234", _ transaction: String
    ) -> [UInt8] {
        Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <\(namespace.root) version="12.10" xmlns="\(namespace.rawValue)" merchantId="\(merchantId)">\
            <authentication><user>\(user)</user><password>\(password)</password></authentication>\
            \(transaction)</\(namespace.root)>
            """.utf8)
    }

    /// An `authorization` (or `sale`) paid with an eProtect registration ID.
    public static func paypage(_ kind: String = "authorization", registrationID: String, orderID: String = "o-1") -> String {
        #"<\#(kind) id="a1" reportGroup="web" customerId="c1"><orderId>\#(orderID)</orderId><amount>1999</amount>"#
            + "<orderSource>applepay</orderSource><paypage><paypageRegistrationId>\(registrationID)</paypageRegistrationId>"
            + "</paypage></\(kind)>"
    }

    /// A `sale` (or `authorization`) with `token` (an Apple Pay token's `paymentData` JSON) in `<applepay>`.
    public static func applePay(_ kind: String = "sale", token: [UInt8], orderID: String = "o-2") throws -> String {
        #"<\#(kind) id="s1" reportGroup="web"><orderId>\#(orderID)</orderId><amount>1999</amount>"#
            + "<orderSource>applepay</orderSource>\(try applePayElement(token))</\(kind)>"
    }

    /// The `<applepay>` element of `token` (an Apple Pay token's `paymentData` JSON), its fields one by one.
    public static func applePayElement(_ token: [UInt8]) throws -> String {
        let fields = try PaymentTokenFields(token)
        return "<applepay><data>\(fields.data)</data><header>"
            + "<ephemeralPublicKey>\(fields.ephemeralPublicKey)</ephemeralPublicKey>"
            + "<publicKeyHash>\(fields.publicKeyHash)</publicKeyHash>"
            + "<transactionId>\(fields.transactionId)</transactionId></header>"
            + "<signature>\(fields.signature)</signature><version>\(fields.version)</version></applepay>"
    }

    /// An `authorization` or `sale` paid with a `token` (`cnpToken`, or `litleToken` in the legacy
    /// namespace), with `extra` right after it (a `processingType`, say).
    public static func tokenTransaction(
        _ value: String, kind: String = "authorization", namespace: Namespace = .cnp, orderSource: String = "ecommerce",
        extra: String = ""
    ) -> String {
        #"<\#(kind) id="k1" reportGroup="web" customerId="c7"><orderId>o-7</orderId><amount>1999</amount>"#
            + "<orderSource>\(orderSource)</orderSource><token><\(namespace.tokenElement)>\(value)</\(namespace.tokenElement)>"
            + "<expDate>0130</expDate><cardValidationNum>123</cardValidationNum></token>\(extra)</\(kind)>"
    }
}
