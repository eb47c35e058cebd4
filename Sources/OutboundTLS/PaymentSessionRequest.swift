/// A merchant-validation request (docs/apple-pay.md, "Merchant validation"), checked before anything leaves: the
/// fields come from a merchant's page and go to Apple as they are.
public struct PaymentSessionRequest: Sendable {
    public enum Initiative: String, Sendable {
        case web
        case messaging
        case inApp = "in_app"
    }

    public let merchantIdentifier: String
    /// Checked by the host policy when the request is sent, not here.
    public let validationURL: String
    public let displayName: String
    public let initiative: Initiative
    /// The domain for `web`; Apple's context string otherwise.
    public let initiativeContext: String

    public init(
        merchantIdentifier: String, validationURL: String, displayName: String, initiative: String, initiativeContext: String
    ) throws(AppleGatewayError) {
        // A registered web merchant's partnerInternalMerchantIdentifier has a wider character set.
        guard GatewayField.isIdentifier(merchantIdentifier, maximum: 128) || WebMerchantField.isPartnerIdentifier(merchantIdentifier)
        else {
            throw AppleGatewayError(
                .invalidRequest,
                "merchantIdentifier must be 1 to 128 letters, digits, dots, hyphens or underscores, or a registered web merchant's "
                    + "partnerInternalMerchantIdentifier")
        }
        guard (1...64).contains(displayName.count), !GatewayField.hasControlCharacters(displayName) else {
            throw AppleGatewayError(.invalidRequest, "displayName must be 1 to 64 characters without control characters")
        }
        guard let parsed = Initiative(rawValue: initiative) else {
            throw AppleGatewayError(.invalidRequest, "initiative must be web, messaging or in_app")
        }
        guard (1...255).contains(initiativeContext.utf8.count), !GatewayField.hasControlCharacters(initiativeContext) else {
            throw AppleGatewayError(.invalidRequest, "initiativeContext must be 1 to 255 bytes without control characters")
        }
        if parsed == .web && !GatewayField.isDNSName(initiativeContext) {
            throw AppleGatewayError(
                .invalidRequest, "initiativeContext must be the page's domain name for initiative web (no scheme, port or path)")
        }
        self.merchantIdentifier = merchantIdentifier
        self.validationURL = validationURL
        self.displayName = displayName
        self.initiative = parsed
        self.initiativeContext = initiativeContext
    }

    /// The body Apple expects.
    var body: [UInt8] {
        CanonicalJSON.encode([
            "merchantIdentifier": merchantIdentifier, "displayName": displayName, "initiative": initiative.rawValue,
            "initiativeContext": initiativeContext,
        ])
    }
}
