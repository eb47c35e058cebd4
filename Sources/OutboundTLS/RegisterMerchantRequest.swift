import Foundation

/// Apple's `RegisterMerchantRequest` (Web Merchant Registration API, Register Merchant), every
/// limit checked when it is made: what reaches Apple is always well formed.
public struct RegisterMerchantRequest: Sendable, Hashable {
    public let partnerInternalMerchantIdentifier: String
    public let partnerMerchantName: String
    public let domainNames: [String]
    /// The integrator or merchant id whose payment processing certificate Apple encrypts to.
    public let encryptTo: String
    /// The merchant's top-level site, for pages hosted on the platform's domain; Apple does not verify it.
    public let merchantURL: String?

    public init(
        partnerInternalMerchantIdentifier: String, partnerMerchantName: String, domainNames: [String], encryptTo: String,
        merchantURL: String?
    ) throws(AppleGatewayError) {
        try WebMerchantField.checkIdentifier(partnerInternalMerchantIdentifier)
        guard WebMerchantField.isText(partnerMerchantName) else {
            throw AppleGatewayError(.invalidRequest, "partnerMerchantName must be 1 to 1024 characters without control characters")
        }
        try WebMerchantField.checkDomains(domainNames)
        guard GatewayField.isPrintableToken(encryptTo, maximum: 255) else {
            throw AppleGatewayError(
                .invalidRequest, "encryptTo must be a merchant or platform integrator id (1 to 255 printable characters, no spaces)")
        }
        if let merchantURL {
            guard merchantURL.utf8.count <= 1024, GatewayField.isPrintableToken(merchantURL, maximum: 1024),
                let parsed = URLComponents(string: merchantURL), parsed.scheme?.lowercased() == "https",
                let host = parsed.host, WebMerchantField.isDomainName(host.lowercased()), parsed.user == nil, parsed.password == nil
            else {
                throw AppleGatewayError(.invalidRequest, "merchantUrl must be an https URL of the merchant's site, at most 1024 characters")
            }
        }
        self.partnerInternalMerchantIdentifier = partnerInternalMerchantIdentifier
        self.partnerMerchantName = partnerMerchantName
        self.domainNames = domainNames
        self.encryptTo = encryptTo
        self.merchantURL = merchantURL
    }

    /// The body Apple expects.
    var body: [UInt8] {
        var object: [String: Any] = [
            "partnerInternalMerchantIdentifier": partnerInternalMerchantIdentifier, "partnerMerchantName": partnerMerchantName,
            "domainNames": domainNames, "encryptTo": encryptTo,
        ]
        if let merchantURL { object["merchantUrl"] = merchantURL }
        return CanonicalJSON.encode(object)
    }
}
