/// Apple's `UnregisterMerchantRequest`: the domains to remove and why, checked when it is made.
public struct UnregisterMerchantRequest: Sendable, Hashable {
    public let partnerInternalMerchantIdentifier: String
    public let domainNames: [String]
    /// "A short, human-readable phrase that describes the cause of unregistration."
    public let reason: String

    public init(partnerInternalMerchantIdentifier: String, domainNames: [String], reason: String) throws(AppleGatewayError) {
        try WebMerchantField.checkIdentifier(partnerInternalMerchantIdentifier)
        try WebMerchantField.checkDomains(domainNames)
        guard WebMerchantField.isText(reason) else {
            throw AppleGatewayError(.invalidRequest, "reason must be 1 to 1024 characters without control characters")
        }
        self.partnerInternalMerchantIdentifier = partnerInternalMerchantIdentifier
        self.domainNames = domainNames
        self.reason = reason
    }

    /// The body Apple expects.
    var body: [UInt8] {
        CanonicalJSON.encode([
            "partnerInternalMerchantIdentifier": partnerInternalMerchantIdentifier, "domainNames": domainNames, "reason": reason,
        ])
    }
}
