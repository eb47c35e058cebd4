import Foundation
import OutboundTLS
import PaywardenStorage

/// A web merchant as the API answers it and `web-merchants … --json` prints it: the registration
/// under Apple's field names, with Paywarden's state beside it. Times are ISO 8601 UTC.
public struct WebMerchantView: Codable, Sendable, Hashable {
    public let partnerInternalMerchantIdentifier: String
    public let partnerMerchantName: String
    public let domainNames: [String]
    public let encryptTo: String
    public let merchantUrl: String?
    /// `active` or `deleted` (the last domain was unregistered).
    public let state: String
    /// SHA-256 (hex) of the domain-verification file stored when it was last registered.
    public let domainAssociationSha256: String?
    public let createdAt: String
    public let updatedAt: String

    public init(_ record: WebMerchantRecord) {
        partnerInternalMerchantIdentifier = record.id
        partnerMerchantName = record.partnerMerchantName
        domainNames = record.domainNames
        encryptTo = record.encryptTo
        merchantUrl = record.merchantURL
        state = record.state.rawValue
        domainAssociationSha256 = record.domainAssociationSHA256
        createdAt = record.createdAt.formatted(.iso8601)
        updatedAt = record.updatedAt.formatted(.iso8601)
    }
}

/// `GET /v1/apple-pay/web-merchants/{id}` and `web-merchants show --json`: Paywarden's record
/// beside Apple's details.
public struct WebMerchantShownView: Codable, Sendable {
    public let registration: WebMerchantView
    /// Apple's `MerchantDetails`; absent for a deleted registration.
    public let apple: MerchantDetails?
    /// Whether Apple's `encryptTo` (a SHA-256) is the hash of the recorded `encryptTo`.
    public let encryptToMatches: Bool?
    public let domainsOnlyHere: [String]
    public let domainsOnlyAtApple: [String]

    public init(_ shown: WebMerchantShown) {
        registration = WebMerchantView(shown.record)
        apple = shown.apple
        encryptToMatches = shown.encryptToMatches
        domainsOnlyHere = shown.onlyHere
        domainsOnlyAtApple = shown.onlyAtApple
    }
}
