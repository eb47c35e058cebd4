import Foundation
import PaywardenPrimitives
import PaywardenStorage

/// A domain an organisation holds, as the API answers it and `web-merchants domains --json`
/// prints it. Times are ISO 8601 UTC.
public struct WebMerchantDomainView: Codable, Sendable, Hashable {
    public let domain: String
    public let organization: OrganizationID
    /// The partnerInternalMerchantIdentifier it is registered for now; absent when none.
    public let webMerchant: String?
    /// `challenge` (the organisation served its challenge), `admin` (an admin registered or gave
    /// it) or `registered-before` (registered before domains needed a proof).
    public let proof: String
    public let provedAt: String

    public init(_ record: WebMerchantDomainRecord) {
        domain = record.domain
        organization = record.organization
        webMerchant = record.merchantID
        proof = record.proof.rawValue
        provedAt = record.provedAt.formatted(.iso8601)
    }
}
