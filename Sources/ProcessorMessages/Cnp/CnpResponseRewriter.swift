/// Rewrites the upstream's `authorizationResponse`/`saleResponse` for the client: the high-value
/// token goes in as `tokenResponse`, and nothing that could be the forwarded account number or
/// cryptogram goes back.
public enum CnpResponseRewriter {
    /// What goes into `tokenResponse` (tokenResponseType: `cnpToken`?, `tokenResponseCode`,
    /// `tokenMessage`, `type`?, `bin`?, `eCheckAccountSuffix`?, in that sequence).
    public struct TokenResult: Sendable, Hashable {
        public var token: String?
        public var code: CnpTokenResponseCode
        public var type: String?
        public var bin: String?

        public init(token: String?, code: CnpTokenResponseCode, type: String? = nil, bin: String? = nil) {
            self.token = token
            self.code = code
            self.type = type
            self.bin = bin
        }
    }

    /// Parses the upstream's body and rewrites it.
    public static func clientResponse(
        _ upstreamBody: [UInt8],
        token: TokenResult?,
        forwarded card: ForwardedCardData?,
        limits: ProcessorXML.Limits = .default
    ) throws(ProcessorMessageError) -> ProcessorXML.Document {
        let document = try XMLFieldReader(format: .cnpAPI, namespaceURI: nil).parse(upstreamBody, limits: limits)
        return try clientResponse(document, token: token, forwarded: card)
    }

    /// Rewrites an already parsed upstream response.
    public static func clientResponse(
        _ upstream: ProcessorXML.Document,
        token: TokenResult?,
        forwarded card: ForwardedCardData?
    ) throws(ProcessorMessageError) -> ProcessorXML.Document {
        var document = upstream
        guard let dialect = CnpDialect(namespaceURI: document.root.name.namespaceURI),
            document.root.name.localName == dialect.responseRootName
        else {
            throw ProcessorMessageError(
                .cnpAPI, .unexpectedRoot, field: document.root.name.localName,
                "the upstream's root element must be cnpOnlineResponse or litleOnlineResponse")
        }
        if let token {
            for index in document.root.children.indices {
                guard case .element(var child) = document.root.children[index], child.name.namespaceURI == dialect.namespaceURI,
                    let kind = CnpPaymentTransaction.Kind.allCases.first(where: { $0.responseName == child.name.localName })
                else { continue }
                insertTokenResponse(token, into: &child, kind: kind, dialect: dialect)
                document.root.children[index] = .element(child)
            }
        }
        let namespace = dialect.namespaceURI
        document.root.transformAll { $0.removeChildren(named: "onlinePaymentCryptogram", namespaceURI: namespace) }
        // Without a forwarded card (a passthrough) account-number fields are still masked.
        try ReplyCardDataScrubber(format: .cnpAPI, card: card).scrub(&document) { element in
            element.name.namespaceURI == namespace && CnpSchema.accountNumberElementNames.contains(element.name.localName)
        }
        return document
    }

    static func insertTokenResponse(
        _ token: TokenResult, into response: inout ProcessorXML.Element, kind: CnpPaymentTransaction.Kind, dialect: CnpDialect
    ) {
        var element = response.makeChild("tokenResponse")
        if let value = token.token { element.appendChild(response.makeChild(dialect.tokenName, text: value)) }
        element.appendChild(response.makeChild("tokenResponseCode", text: token.code.code))
        element.appendChild(response.makeChild("tokenMessage", text: token.code.message))
        if let type = token.type { element.appendChild(response.makeChild("type", text: type)) }
        if let bin = token.bin { element.appendChild(response.makeChild("bin", text: bin)) }

        let namespace = dialect.namespaceURI
        if response.replaceFirstChild(named: "tokenResponse", namespaceURI: namespace, with: element) { return }
        let before = kind == .authorization ? CnpSchema.beforeTokenResponseInAuthorization : CnpSchema.beforeTokenResponseInSale
        let lastPredecessor = response.children.lastIndex { node in
            guard let child = node.element, child.name.namespaceURI == namespace else { return false }
            return before.contains(child.name.localName)
        }
        response.insertChild(.element(element), at: lastPredecessor.map { $0 + 1 } ?? 0)
    }
}
