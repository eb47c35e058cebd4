import Foundation
import Testing

@testable import ProcessorMessages

/// The relays' rules read one value of each field they look at: the stored-credential rule a
/// cnpAPI `orderSource`, `processingType` and `recurringRequest` or MercuryPay's `Frequency`, the
/// card swap the token and its type, Radial's the `PaymentContext`. A message carrying a second
/// one could be judged on one and sent upstream with the other, so each format refuses a second,
/// including one in another namespace (a reader that ignores namespaces sees two) and a JSON
/// member spelt in another case (a reader that ignores case sees two).
@Suite("Repeated fields a relay's rule reads")
struct RepeatedRuleFieldTests {
    struct Refusal: Sendable, CustomTestStringConvertible {
        let label: String
        let body: [UInt8]
        let field: String
        var testDescription: String { label }
    }

    static let cnp = CnpDialect.cnp.namespaceURI

    /// An authorization paid with a `token`, `after` it the elements the schema puts there.
    static func tokenAuthorization(
        orderSource: String = "<orderSource>ecommerce</orderSource>",
        token: String = "<cnpToken>4457119922390123</cnpToken><expDate>0130</expDate><type>VI</type>", after: String = ""
    ) -> [UInt8] {
        Array(
            (#"<cnpOnlineRequest xmlns="\#(cnp)" version="12.10" merchantId="01234">"#
                + "<authentication><user>u</user><password>p</password></authentication>"
                + #"<authorization id="k1" reportGroup="web"><orderId>o-7</orderId><amount>1999</amount>\#(orderSource)"#
                + "<token>\(token)</token>\(after)</authorization></cnpOnlineRequest>").utf8)
    }

    static let cnpRefusals: [Refusal] = [
        Refusal(
            label: "two orderSource",
            body: tokenAuthorization(orderSource: "<orderSource>ecommerce</orderSource><orderSource>recurring</orderSource>"),
            field: "authorization/orderSource"),
        Refusal(
            label: "an orderSource in another namespace",
            body: tokenAuthorization(
                orderSource: #"<orderSource>ecommerce</orderSource><x:orderSource xmlns:x="urn:other">recurring</x:orderSource>"#),
            field: "authorization/orderSource"),
        Refusal(
            label: "two processingType",
            body: tokenAuthorization(
                after: "<processingType>cardholderInitiatedCOF</processingType><processingType>merchantInitiatedCOF</processingType>"),
            field: "authorization/processingType"),
        Refusal(
            label: "a processingType in the legacy namespace",
            body: tokenAuthorization(
                after: "<processingType>cardholderInitiatedCOF</processingType>"
                    + #"<processingType xmlns="\#(CnpDialect.litle.namespaceURI)">merchantInitiatedCOF</processingType>"#),
            field: "authorization/processingType"),
        Refusal(
            label: "two recurringRequest",
            body: tokenAuthorization(after: "<recurringRequest/><recurringRequest/>"), field: "authorization/recurringRequest"),
        Refusal(
            label: "two cnpToken",
            body: tokenAuthorization(token: "<cnpToken>4457119922390123</cnpToken><cnpToken>4111111111111111</cnpToken>"),
            field: "authorization/token/cnpToken"),
        Refusal(
            label: "two token types",
            body: tokenAuthorization(token: "<cnpToken>4457119922390123</cnpToken><type>VI</type><type>MC</type>"),
            field: "authorization/token/type"),
    ]

    @Test(arguments: cnpRefusals)
    func cnpAPIRefusesASecondOfWhatARuleReads(_ refusal: Refusal) {
        let error = messageError { _ = try CnpOnlineRequest.parse(refusal.body) }
        #expect(error?.code == .duplicateField && error?.field == refusal.field, "\(String(describing: error))")
    }

    @Test func cnpAPITakesOneOfEach() throws {
        let request = try CnpOnlineRequest.parse(
            Self.tokenAuthorization(after: "<recurringRequest/><processingType>merchantInitiatedCOF</processingType>"))
        guard case .authorization(let authorization) = request.transaction else {
            Issue.record("not an authorization")
            return
        }
        #expect(authorization.paymentSource == .other("token"))
    }

    static let mercuryPayRefusals: [Refusal] = {
        let base =
            #""OperatorID":"op-1","InvoiceNo":"10042","Purchase":"10.00","TokenType":"OmniToken","RecordNo":"1111000276870123""#
        return [
            Refusal(
                label: "Frequency and frequency", body: Array(#"{\#(base),"Frequency":"OneTime","frequency":"Recurring"}"#.utf8),
                field: "frequency"),
            Refusal(
                label: "RecordNo and RECORDNO", body: Array(#"{\#(base),"Frequency":"OneTime","RECORDNO":"4111111111111111"}"#.utf8),
                field: "RECORDNO"),
            Refusal(
                label: "TokenType and tokentype", body: Array(#"{\#(base),"Frequency":"OneTime","tokentype":"RegistrationID"}"#.utf8),
                field: "tokentype"),
        ]
    }()

    @Test(arguments: mercuryPayRefusals)
    func mercuryPayRefusesAMemberSpeltAgainInAnotherCase(_ refusal: Refusal) {
        let error = messageError { _ = try MercuryPayRequest.parse(refusal.body, operation: .saleByRecordNo) }
        #expect(error?.code == .duplicateField && error?.field == refusal.field, "\(String(describing: error))")
    }

    static let radialRefusals: [Refusal] = {
        let path = "CreditCardAuthRequest"
        let context = #"<PaymentContext><OrderId>ORDER-0008</OrderId><PaymentAccountUniqueId isToken="true">4111111111111111"#
            + "</PaymentAccountUniqueId></PaymentContext>"
        func replacing(_ target: String, with replacement: String) -> [UInt8] {
            let request = (try? RadialTests.tokenRequest()) ?? []
            return Array(String(decoding: request, as: UTF8.self).replacingOccurrences(of: target, with: replacement).utf8)
        }
        return [
            Refusal(
                label: "two PaymentContext", body: replacing("<ExpirationDate>", with: context + "<ExpirationDate>"),
                field: "\(path)/PaymentContext"),
            Refusal(
                label: "a PaymentContext in another namespace",
                body: replacing("<ExpirationDate>", with: context.replacingOccurrences(
                    of: "<PaymentContext>", with: #"<PaymentContext xmlns="urn:other">"#) + "<ExpirationDate>"),
                field: "\(path)/PaymentContext"),
            Refusal(
                label: "two PaymentAccountUniqueId",
                body: replacing(
                    "</PaymentAccountUniqueId></PaymentContext>",
                    with: #"</PaymentAccountUniqueId><PaymentAccountUniqueId isToken="true">4111111111111111"#
                        + "</PaymentAccountUniqueId></PaymentContext>"),
                field: "\(path)/PaymentContext/PaymentAccountUniqueId"),
        ]
    }()

    @Test(arguments: radialRefusals)
    func radialRefusesASecondOfWhatARuleReads(_ refusal: Refusal) {
        let error = messageError { _ = try RadialCreditCardAuthRequest.parse(refusal.body) }
        #expect(error?.code == .duplicateField && error?.field == refusal.field, "\(String(describing: error))")
    }
}
