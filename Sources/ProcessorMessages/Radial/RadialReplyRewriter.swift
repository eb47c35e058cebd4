/// Rewrites the upstream's `CreditCardAuthReply` for the client: `PaymentContext/PaymentAccountUniqueId`
/// becomes the high-value token with `isToken="true"` (docs/processors.md, "Radial": the token,
/// never the PAN), an `EncryptedPaymentAccountUniqueId` is replaced the same way, and the forwarded account
/// number and cryptogram appear nowhere else. Everything else (ResponseCode, AVS/CVV codes,
/// AmountAuthorized, TenderType, Extension, xsd:any additions) is kept.
public enum RadialReplyRewriter {
    public static func clientReply(
        _ upstreamBody: [UInt8], token: String, forwarded card: ForwardedCardData?, limits: ProcessorXML.Limits = .default
    ) throws(ProcessorMessageError) -> ProcessorXML.Document {
        let reader = RadialSchema.reader
        var document = try reader.parse(upstreamBody, limits: limits)
        let namespace = RadialSchema.namespaceURI
        guard document.root.name.matches("CreditCardAuthReply", namespaceURI: namespace) else {
            throw ProcessorMessageError(
                .radial, .unexpectedRoot, field: document.root.name.localName,
                "the upstream's root element must be CreditCardAuthReply")
        }
        try reader.rules.length(token, "PaymentAccountUniqueId", min: 1, max: RadialSchema.accountUniqueIdRange.upperBound)
        let replaced = document.root.withFirstChild(named: "PaymentContext", namespaceURI: namespace) { context in
            let index = context.children.firstIndex { node in
                guard let child = node.element, child.name.namespaceURI == namespace else { return false }
                return child.name.localName == "PaymentAccountUniqueId" || child.name.localName == "EncryptedPaymentAccountUniqueId"
            }
            var account = context.makeChild("PaymentAccountUniqueId", text: token)
            account.setAttribute("isToken", value: "true")
            context.removeChildren(named: "EncryptedPaymentAccountUniqueId", namespaceURI: namespace)
            context.removeChildren(named: "PaymentAccountUniqueId", namespaceURI: namespace)
            context.insertChild(.element(account), at: index ?? context.children.count)
        }
        guard replaced else { throw reader.rules.missing("CreditCardAuthReply/PaymentContext") }
        try ReplyCardDataScrubber(format: .radial, card: card).scrub(&document)
        return document
    }
}
