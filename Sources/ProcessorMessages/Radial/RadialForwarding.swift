/// Turns a digital-wallet `CreditCardAuthRequest` into the card-not-present one the upstream
/// receives (docs/processors.md, "Radial", Paywarden's design), following the 1.0 sequence of
/// Payment-Service-CreditCardAuth-1.0.xsd:
///
///     PaymentContext {OrderId, PaymentAccountUniqueId isToken="false"}, ExpirationDate (gYearMonth),
///     CardSecurityCode?, Amount, BillingFirstName, BillingLastName, BillingPhoneNo, BillingAddress,
///     CustomerEmail, CustomerIPAddress, ShipToFirstName, ShipToLastName, ShipToPhoneNo,
///     ShippingAddress, isRequestToCorrectCVVOrAVSError, SecureVerificationData?
///
/// - `WalletPaymentInformation` and the top-level `OrderId` are removed, and so are any
///   `PaymentContext`, `ExpirationDate` and `SecureVerificationData` the client sent; `PaymentContext`
///   (the OrderId and the DPAN) and `ExpirationDate` take the wallet's place at the front (a token
///   request's `PaymentContext`, with the high-value token, is replaced where it stood).
/// - `isRequestToCorrectCVVOrAVSError`, required by the sequence, is added as `false` after
///   `ShippingAddress` when the wallet request had none.
/// - With a cryptogram, `SecureVerificationData` follows it (a stored credential has none).
///   SecureVerificationDataType's sequence is AuthenticationAvailable, AuthenticationStatus,
///   CavvUcaf, TransactionId, ECI?,
///   PayerAuthenticationResponse (Payment-Datatypes-1.0.xsd), all but ECI required: CavvUcaf carries
///   the cryptogram, ECI Apple's eciIndicator; AuthenticationAvailable and AuthenticationStatus are
///   `Y` (the token cryptogram is the issuer-verified authentication); TransactionId (a 3-D Secure
///   XID) and PayerAuthenticationResponse (a 3-D Secure PARes) have no Apple Pay counterpart and are
///   sent empty, which their types (maxLength only) allow.
/// - Elements after that (`SchemaVersion`, `PaymentId`, unknown ones) stay in place.
///
/// The request URI's tender code changes from DW to the card's (``Forwarded/tenderType``).
public enum RadialForwarding {
    public struct Forwarded: Sendable, CustomStringConvertible, CustomReflectable {
        public var document: ProcessorXML.Document
        /// The URI's TenderCode for the card (`VC`, `MC`, `AM`), when Radial documents one.
        public var tenderType: String?

        public var description: String { "RadialForwarding.Forwarded(tenderType: \(tenderType ?? "nil"), document: <holds card data>)" }

        public var customMirror: Mirror {
            Mirror(self, children: ["tenderType": tenderType as Any, "document": "<holds card data>"])
        }
    }

    public static func upstreamRequest(_ request: RadialCreditCardAuthRequest, card: ForwardedCardData) -> Forwarded {
        var root = request.document.root
        let namespace = RadialSchema.namespaceURI
        let template = root.firstChild(named: "WalletPaymentInformation", namespaceURI: namespace) ?? root
        // The card goes where the request carried it: the wallet, or a token request's PaymentContext
        // (both first among the known elements, so removing the others below does not move it).
        let firstIndex =
            root.childIndices(named: "WalletPaymentInformation", namespaceURI: namespace).first
            ?? root.childIndices(named: "PaymentContext", namespaceURI: namespace).first ?? 0
        // Card data is Paywarden's to place: whatever the client put there does not travel.
        for name in ["PaymentContext", "ExpirationDate", "SecureVerificationData"] {
            root.removeChildren(named: name, namespaceURI: namespace)
        }
        root.removeChildren(named: "WalletPaymentInformation", namespaceURI: namespace)
        root.removeChildren(named: "OrderId", namespaceURI: namespace)

        var context = template.makeChild("PaymentContext")
        context.appendChild(template.makeChild("OrderId", text: request.orderId))
        var account = template.makeChild("PaymentAccountUniqueId", text: card.accountNumber.revealed)
        account.setAttribute("isToken", value: "false")
        context.appendChild(account)
        let insertAt = min(firstIndex, root.children.count)
        root.insertChild(.element(template.makeChild("ExpirationDate", text: card.expirationYearMonth)), at: insertAt)
        root.insertChild(.element(context), at: insertAt)

        var flagIndex = root.childIndices(named: "isRequestToCorrectCVVOrAVSError", namespaceURI: namespace).first
        if flagIndex == nil, let shipping = root.childIndices(named: "ShippingAddress", namespaceURI: namespace).first {
            root.insertChild(.element(template.makeChild("isRequestToCorrectCVVOrAVSError", text: "false")), at: shipping + 1)
            flagIndex = shipping + 1
        }
        if let cryptogram = card.cryptogram?.revealed {
            root.removeChildren(named: "SecureVerificationData", namespaceURI: namespace)
            var data = template.makeChild("SecureVerificationData")
            data.appendChild(template.makeChild("AuthenticationAvailable", text: "Y"))
            data.appendChild(template.makeChild("AuthenticationStatus", text: "Y"))
            data.appendChild(template.makeChild("CavvUcaf", text: cryptogram))
            data.appendChild(template.makeChild("TransactionId"))
            if let eci = card.eci { data.appendChild(template.makeChild("ECI", text: eci)) }
            data.appendChild(template.makeChild("PayerAuthenticationResponse"))
            let after = root.childIndices(named: "isRequestToCorrectCVVOrAVSError", namespaceURI: namespace).first ?? flagIndex
            let position =
                after.map { $0 + 1 }
                ?? (root.children.firstIndex { node in
                    guard let child = node.element else { return false }
                    return child.name.namespaceURI == namespace && RadialSchema.afterSecureVerificationData.contains(child.name.localName)
                } ?? root.children.count)
            root.insertChild(.element(data), at: position)
        }
        var document = request.document
        document.root = root
        return Forwarded(document: document, tenderType: card.resolvedNetwork?.radialTenderType)
    }
}
