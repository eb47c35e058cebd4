/// Rewrites an `authorization` or `sale` for the upstream, Worldpay's "merchant decryption" form
/// (Worldpay cnpAPI reference, "Merchant Decryption of Apple Pay PKPaymentToken": populate `number`
/// with the device PAN, `expDate` with the expiry, `authenticationValue` with the cryptogram, and set
/// `orderSource` to `applepay`).
///
/// Positions follow the schema's sequence for `authorization`/`sale` (cnpTransaction_v12.10.xsd,
/// litleTransaction_v10.8.xsd):
///
///     orderId, amount, secondaryAmount?, surchargeAmount?, orderSource, customerInfo?, billToAddress?,
///     shipToAddress?, (mpos | card | paypal | token | paypage | applepay | …),
///     billMeLaterRequest? (litle), cardholderAuthentication? (sale: or fraudCheck?),
///     processingInstructions?, pos?, customBilling?, taxType?, enhancedData?, …
///
/// - `card` {`type`, `number`, `expDate`, `cardValidationNum`?} replaces `paypage`/`applepay` in place
///   (cardType is `type, number?, expDate?` then `cardValidationNum?`, `pin?`); a paypage's
///   `cardValidationNum` moves into it.
/// - `orderSource` keeps its position; its value becomes `applepay`.
/// - `cardholderAuthentication` goes right after `card` (and after a litle `billMeLaterRequest`).
///   An existing one keeps its other children and gets `authenticationValue` first (its content is
///   an `xs:all`). A sale's `fraudCheck` (same type, "not used in the mapping" says the XSD) is
///   renamed `cardholderAuthentication` so the cryptogram is where Worldpay reads it.
///
/// ECI: cnpAPI has no element for an ECI on a card-not-present authorization. `fraudCheckType` holds
/// `authenticationValue`, `authenticationTransactionId` (a 3-D Secure XID / Visa TAVV or Mastercard
/// directory-server id), `customerIpAddress`, `authenticatedByMerchant` (later versions add
/// `authenticationProtocolVersion`, `tokenAuthenticationValue`); `networkTransactionId` is the
/// network's id for merchant-initiated follow-ups. None of them is an ECI, and Worldpay derives the
/// wallet ECI itself from `orderSource` = `applepay` ("Worldpay detects that this is an Apple Pay
/// transaction and submits the transaction with the appropriate information"). So the ECI is not
/// sent; it appears only in a `registerTokenResponse`'s `applepayResponse/eciIndicator`.
///
/// Everything else in the message, unknown elements and foreign namespaces included, is untouched.
public enum CnpUpstreamRewriter {
    /// The upstream's own credentials and merchant, when they differ from the client's.
    public struct UpstreamAccount: Sendable, Hashable {
        public var merchantId: String?
        public var user: String
        public var password: String

        public init(merchantId: String? = nil, user: String, password: String) {
            self.merchantId = merchantId
            self.user = user
            self.password = password
        }
    }

    /// The request document for the upstream, with `card` data in place of the paypage or token.
    public static func upstreamRequest(
        _ request: CnpOnlineRequest,
        card: ForwardedCardData,
        account: UpstreamAccount? = nil
    ) throws(ProcessorMessageError) -> ProcessorXML.Document {
        let transaction = try paymentTransaction(of: request)
        guard transaction.needsCardData else {
            throw ProcessorMessageError(
                .cnpAPI, .unsupportedPaymentSource, field: transaction.kind.rawValue,
                "\(transaction.kind.rawValue) has no paypage or applepay to replace")
        }
        return try request.document(
            substitutingCardIn: transaction, replacing: ["paypage", "applepay"], card: card, fallbackType: paypageType(transaction),
            walletPayment: true, account: account)
    }

    /// The request document for the upstream with a Paywarden high-value token's card in place of
    /// the `token` that named it: `card` {`type`, `number`, `expDate`, the token's `cardValidationNum`}
    /// where `token` stood. The card's expiry is the vault's (the token's own `expDate` is the
    /// client's copy), its type the BIN's (else the token's `type`). Nothing else changes: a stored
    /// token has no cryptogram, so `orderSource` stays the client's (`applepay` would claim a
    /// wallet payment with one) and no `cardholderAuthentication` is added.
    public static func storedCardRequest(
        _ request: CnpOnlineRequest, card: ForwardedCardData, account: UpstreamAccount? = nil
    ) throws(ProcessorMessageError) -> ProcessorXML.Document {
        guard card.cryptogram == nil else {
            throw ProcessorMessageError(.cnpAPI, .invalidCardData, field: "token", "a stored token's card carries no cryptogram")
        }
        let transaction = try paymentTransaction(of: request)
        let namespace = request.dialect.namespaceURI
        let tokenType = transaction.element.firstChild(named: "token", namespaceURI: namespace)?
            .firstChild(named: "type", namespaceURI: namespace)?.text
        return try request.document(
            substitutingCardIn: transaction, replacing: ["token"], card: card, fallbackType: tokenType.flatMap { $0.isEmpty ? nil : $0 },
            walletPayment: false, account: account)
    }

    /// A transaction that needs no card data substituted (a `card` or `token` authorization, a
    /// capture, a credit, …), unchanged but for the upstream's credentials. A `registerTokenRequest`,
    /// which Paywarden answers, and a paypage or applepay, which must be substituted, are refused.
    public static func passthroughRequest(
        _ request: CnpOnlineRequest, account: UpstreamAccount
    ) throws(ProcessorMessageError) -> ProcessorXML.Document {
        switch request.transaction {
        case .registerToken:
            throw ProcessorMessageError(
                .cnpAPI, .unsupportedTransaction, field: request.transaction.name, "registerTokenRequest is answered by Paywarden")
        case .authorization(let transaction), .sale(let transaction):
            guard !transaction.needsCardData else {
                throw ProcessorMessageError(
                    .cnpAPI, .unsupportedPaymentSource, field: transaction.kind.rawValue,
                    "a paypage or applepay is replaced by the card data, never passed through")
            }
        case .other:
            break
        }
        // A credit, a force capture or a subscription update can name a paypage too: a registration
        // ID or Apple Pay token never reaches the upstream, wherever it stands.
        var stack = [request.document.root]
        while let element = stack.popLast() {
            if ["paypage", "paypageRegistrationId", "applepay"].contains(element.name.localName) {
                throw ProcessorMessageError(
                    .cnpAPI, .unsupportedPaymentSource, field: element.name.localName,
                    "\(request.transaction.name) carries a \(element.name.localName), which is not passed through")
            }
            stack += element.childElements
        }
        var document = request.document
        use(account, in: &document, namespace: request.dialect.namespaceURI)
        return document
    }

    fileprivate static func use(_ account: UpstreamAccount, in document: inout ProcessorXML.Document, namespace: String) {
        if let merchantId = account.merchantId { document.root.setAttribute("merchantId", value: merchantId) }
        document.root.withFirstChild(named: "authentication", namespaceURI: namespace) { authentication in
            authentication.withFirstChild(named: "user", namespaceURI: namespace) { $0.setText(account.user) }
            authentication.withFirstChild(named: "password", namespaceURI: namespace) { $0.setText(account.password) }
        }
    }

    private static func paypageType(_ transaction: CnpPaymentTransaction) -> String? {
        if case .paypage(let paypage) = transaction.paymentSource, let type = paypage.type, !type.isEmpty { return type }
        return nil
    }

    /// Puts `card` in place of the first child named in `sources`. A wallet payment (a paypage or an
    /// Apple Pay token) also gets `orderSource` `applepay` and its cryptogram.
    static func substituteCard(
        in element: inout ProcessorXML.Element, replacing sources: Set<String>, dialect: CnpDialect, card: ForwardedCardData,
        fallbackType: String?, walletPayment: Bool
    ) throws(ProcessorMessageError) {
        let namespace = dialect.namespaceURI
        guard
            let sourceIndex = element.children.firstIndex(where: { node in
                guard let child = node.element, child.name.namespaceURI == namespace else { return false }
                return sources.contains(child.name.localName)
            }), let source = element.children[sourceIndex].element
        else {
            throw ProcessorMessageError(
                .cnpAPI, .unsupportedPaymentSource, field: element.name.localName,
                "no \(sources.sorted().joined(separator: " or ")) to replace")
        }
        guard let type = card.resolvedNetwork?.cnpCode ?? fallbackType else {
            throw ProcessorMessageError(
                .cnpAPI, .invalidCardData, field: "card/type", "the card network could not be determined from the BIN")
        }
        var cardElement = source.makeChild("card")
        cardElement.appendChild(source.makeChild("type", text: type))
        cardElement.appendChild(source.makeChild("number", text: card.accountNumber.revealed))
        cardElement.appendChild(source.makeChild("expDate", text: card.expirationMMYY))
        if let cvv = source.firstChild(named: "cardValidationNum", namespaceURI: namespace) { cardElement.appendChild(cvv) }
        element.children[sourceIndex] = .element(cardElement)
        guard walletPayment else { return }

        element.withFirstChild(named: "orderSource", namespaceURI: namespace) { $0.setText("applepay") }
        guard let cryptogram = card.cryptogram?.revealed else { return }
        try placeCryptogram(cryptogram, in: &element, after: sourceIndex, template: source, namespace: namespace)
    }

    private static func placeCryptogram(
        _ cryptogram: String, in element: inout ProcessorXML.Element, after cardIndex: Int,
        template: ProcessorXML.Element, namespace: String
    ) throws(ProcessorMessageError) {
        let value = template.makeChild("authenticationValue", text: cryptogram)
        for name in ["cardholderAuthentication", "fraudCheck"] {
            guard let index = element.childIndices(named: name, namespaceURI: namespace).first,
                var existing = element.children[index].element
            else { continue }
            existing.name.localName = "cardholderAuthentication"
            existing.removeChildren(named: "authenticationValue", namespaceURI: namespace)
            existing.insertChild(.element(value), at: 0)
            element.children[index] = .element(existing)
            return
        }
        var holder = template.makeChild("cardholderAuthentication")
        holder.appendChild(value)
        var insertAt = cardIndex + 1
        while insertAt < element.children.count {
            switch element.children[insertAt] {
            case .element(let child)
            where child.name.namespaceURI == namespace
                && CnpSchema.betweenPaymentSourceAndCardholderAuthentication.contains(child.name.localName):
                insertAt += 1
            case .text(let text) where text.allSatisfy(\.isWhitespace):
                insertAt += 1
            case .comment:
                insertAt += 1
            default:
                element.insertChild(.element(holder), at: insertAt)
                return
            }
        }
        element.insertChild(.element(holder), at: insertAt)
    }

    /// The authorization or sale `request` carries: the only transactions rewritten for the upstream.
    private static func paymentTransaction(of request: CnpOnlineRequest) throws(ProcessorMessageError) -> CnpPaymentTransaction {
        switch request.transaction {
        case .authorization(let value), .sale(let value): return value
        case .registerToken, .other:
            throw ProcessorMessageError(
                .cnpAPI, .unsupportedTransaction, field: request.transaction.name,
                "only authorization and sale are rewritten for the upstream")
        }
    }
}

extension CnpOnlineRequest {
    /// The document with `transaction`'s element carrying `card` in place of its `sources` (by
    /// ``CnpUpstreamRewriter/substituteCard(in:replacing:dialect:card:fallbackType:walletPayment:)``),
    /// under the upstream's credentials when `account` is given.
    fileprivate func document(
        substitutingCardIn transaction: CnpPaymentTransaction, replacing sources: Set<String>, card: ForwardedCardData,
        fallbackType: String?,
        walletPayment: Bool, account: CnpUpstreamRewriter.UpstreamAccount?
    ) throws(ProcessorMessageError) -> ProcessorXML.Document {
        var element = transaction.element
        try CnpUpstreamRewriter.substituteCard(
            in: &element, replacing: sources, dialect: dialect, card: card, fallbackType: fallbackType, walletPayment: walletPayment)
        var document = self.document
        let namespace = dialect.namespaceURI
        guard let index = document.root.childIndices(named: transaction.kind.rawValue, namespaceURI: namespace).first else {
            throw ProcessorMessageError(.cnpAPI, .missingField, field: transaction.kind.rawValue, "the transaction element is missing")
        }
        document.root.children[index] = .element(element)
        if let account { CnpUpstreamRewriter.use(account, in: &document, namespace: namespace) }
        return document
    }
}
