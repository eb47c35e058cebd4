import Foundation
import ProcessorMessages

extension ProcessorUpstreamStandIn {
    /// Records a Radial card-not-present authorization and answers a `CreditCardAuthReply`: an
    /// approval or a decline with the account number echoed in `PaymentAccountUniqueId` (the relay
    /// must replace it with the token), a `Fault`, or an HTTP error.
    func respondRadial(path: String, body: [UInt8], apiKey: String?) -> (StandInResponse, Duration) {
        record(ReceivedRadialRequest(path: path, body: body, apiKey: apiKey), in: \.receivedRadial, answering: Self.radialResponse)
    }

    static func radialResponse(to request: ReceivedRadialRequest, answer: Answer) -> StandInResponse {
        let namespace = ReceivedRadialRequest.namespace
        var echo = (elements: "", prolog: "", epilog: "")
        if case .approveEchoing(let form) = answer, let number = request.accountNumber {
            echo = form.xml(accountNumber: number, cryptogram: request.cryptogram ?? "")
        }
        func xml(_ text: String) -> StandInResponse {
            StandInResponse(
                status: 200, body: Array(#"<?xml version="1.0" encoding="UTF-8"?>\#(echo.prolog)\#(text)\#(echo.epilog)"#.utf8),
                headers: [("Content-Type", "application/xml")])
        }
        func fault(_ message: String) -> StandInResponse {
            xml(
                #"<Fault xmlns="\#(namespace)"><CreateTimestamp>2026-01-01T00:00:00+00:00</CreateTimestamp>"#
                    + "<Code>VALIDATION_FAILED</Code><Description>\(escape(message))</Description></Fault>")
        }
        guard request.problems.isEmpty || !answer.approves else { return fault("stand-in: " + request.problems.joined(separator: "; ")) }
        if let response = formatFreeAnswer(answer, contentType: "application/xml") { return response }
        if case .envelopeError(let message) = answer { return fault(message) }
        let approved = answer.approves
        let code: String =
            switch answer {
            case .decline(let code, _): code
            default: "00"
            }
        let amount = request.element("Amount")
        return xml(
            #"<CreditCardAuthReply xmlns="\#(namespace)"><PaymentContext><OrderId>\#(escape(request.orderId ?? ""))</OrderId>"#
                + #"<PaymentAccountUniqueId isToken="false">\#(request.accountNumber ?? "")</PaymentAccountUniqueId></PaymentContext>"#
                + "<AuthorizationResponseCode>\(escape(code))</AuthorizationResponseCode>"
                + "<BankAuthorizationCode>\(approved ? "123456" : "")</BankAuthorizationCode><CVV2ResponseCode>M</CVV2ResponseCode>"
                + "<AVSResponseCode>Y</AVSResponseCode>"
                + #"<AmountAuthorized currencyCode="\#(escape(amount?.attribute("currencyCode") ?? "USD"))">"#
                + "\(approved ? escape(amount?.text ?? "0.00") : "0.00")</AmountAuthorized>"
                + "<ResponseCode>\(approved ? "APPROVED" : "DECL")</ResponseCode>"
                + "<TenderType>\(escape(request.tenderType ?? ""))</TenderType>\(echo.elements)</CreditCardAuthReply>")
    }
}

/// A Radial card-not-present `CreditCardAuthRequest` as the stand-in received it: the DPAN in
/// `PaymentContext/PaymentAccountUniqueId isToken="false"`, `ExpirationDate`, the cryptogram in
/// `SecureVerificationData/CavvUcaf` (none for a stored credential), the `apiKey` header, and what should not have been there (a
/// `WalletPaymentInformation`, the wallet token's encrypted data, a tender type other than the path's).
public struct ReceivedRadialRequest: Sendable {
    static let pathPrefix = "/v1.0/stores/"
    static let namespace = "http://api.gsicommerce.com/schema/checkout/1.0"

    public let path: String
    public let body: [UInt8]
    public let apiKey: String?
    public let document: ProcessorXML.Document?
    public let problems: [String]

    public var text: String { String(decoding: body, as: UTF8.self) }
    /// `VC`, `MC` or `AM`, from the path's last segment.
    public var tenderType: String? {
        guard let last = path.split(separator: "/").last, last.hasSuffix(".xml") else { return nil }
        return String(last.dropLast(4))
    }
    public var orderId: String? { context?.firstChild(named: "OrderId", namespaceURI: Self.namespace)?.text }
    public var accountNumber: String? { account?.text }
    public var expirationDate: String? { element("ExpirationDate")?.text }
    public var cryptogram: String? { verification?.firstChild(named: "CavvUcaf", namespaceURI: Self.namespace)?.text }
    public var eci: String? { verification?.firstChild(named: "ECI", namespaceURI: Self.namespace)?.text }

    public func element(_ name: String) -> ProcessorXML.Element? { document?.root.firstChild(named: name, namespaceURI: Self.namespace) }

    private var context: ProcessorXML.Element? { element("PaymentContext") }
    private var account: ProcessorXML.Element? { context?.firstChild(named: "PaymentAccountUniqueId", namespaceURI: Self.namespace) }
    private var verification: ProcessorXML.Element? { element("SecureVerificationData") }

    init(path: String, body: [UInt8], apiKey: String?) {
        self.path = path
        self.body = body
        self.apiKey = apiKey
        document = try? ProcessorXML.parse(body)
        var problems: [String] = []
        let root = document?.root
        if root?.name.matches("CreditCardAuthRequest", namespaceURI: Self.namespace) != true {
            problems.append("the body is not a CreditCardAuthRequest in Radial's namespace")
        }
        if root?.firstChild(named: "WalletPaymentInformation", namespaceURI: Self.namespace) != nil {
            problems.append("the body holds WalletPaymentInformation")
        }
        let tender = path.split(separator: "/").last.map(String.init) ?? ""
        if !path.hasPrefix(Self.pathPrefix) || !["VC.xml", "MC.xml", "AM.xml"].contains(tender) {
            problems.append("unexpected path \(path)")
        }
        let accountElement = root?.firstChild(named: "PaymentContext", namespaceURI: Self.namespace)?
            .firstChild(named: "PaymentAccountUniqueId", namespaceURI: Self.namespace)
        let number = accountElement?.text ?? ""
        if !(12...19).contains(number.count) || !number.allSatisfy({ $0.isASCII && $0.isNumber }) {
            problems.append("PaymentContext/PaymentAccountUniqueId is not 12–19 digits")
        }
        if accountElement?.attribute("isToken") != "false" { problems.append("PaymentAccountUniqueId is not isToken=\"false\"") }
        let expiry = root?.firstChild(named: "ExpirationDate", namespaceURI: Self.namespace)?.text ?? ""
        if expiry.count != 7 || expiry.dropFirst(4).first != "-" { problems.append("ExpirationDate is not YYYY-MM") }
        // A SecureVerificationData is whole when it is there; a stored credential (a merchant token's
        // later use) has none, so its absence is for the tests to check (`cryptogram`), not a problem.
        if let verification = root?.firstChild(named: "SecureVerificationData", namespaceURI: Self.namespace),
            verification.firstChild(named: "CavvUcaf", namespaceURI: Self.namespace) == nil
        {
            problems.append("SecureVerificationData without CavvUcaf")
        }
        self.problems = problems
    }
}
