import Foundation
import PaywardenPrimitives

/// Whose a web domain is here (docs/web-merchants.md, "Who may register a domain"): the
/// organisation that proved it controls the domain, or that an admin gave it to, and the web
/// merchant it is registered for now. The domain is the primary key, so a domain belongs to one
/// organisation and one web merchant at a time whatever requests race.
public struct WebMerchantDomainRecord: Sendable, Hashable {
    /// How the organisation came to hold the domain.
    public enum Proof: String, Sendable, Hashable, CaseIterable {
        /// The organisation's challenge was served under the domain's well-known path.
        case challenge
        /// An admin registered the domain for the organisation, or gave it to it.
        case admin
        /// Registered for the organisation before domains needed a proof (the row came from the
        /// web merchant's record when the table was made).
        case registeredBefore = "registered-before"
    }

    /// Lowercase, as registered.
    public var domain: String
    public var organization: OrganizationID
    /// The partnerInternalMerchantIdentifier the domain is registered (or being registered) for;
    /// nil when it is the organisation's but no web merchant's.
    public var merchantID: String?
    public var proof: Proof
    public var provedAt: Date

    public init(domain: String, organization: OrganizationID, merchantID: String?, proof: Proof, provedAt: Date) {
        self.domain = domain
        self.organization = organization
        self.merchantID = merchantID
        self.proof = proof
        self.provedAt = provedAt
    }
}
