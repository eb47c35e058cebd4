import Foundation
import PaywardenPrimitives

/// A web merchant registered with Apple by the platform integrator (Apple's Web Merchant
/// Registration API): what Paywarden sent, which domains are registered now, and whether Apple
/// still holds the registration.
public struct WebMerchantRecord: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Nothing registered at Apple yet: the identifier is held for its organisation while its
        /// first registration is under way, so no other organisation's can start.
        case reserved
        /// At least one domain is registered.
        case active
        /// Its last domain was unregistered: Apple deleted the registration.
        case deleted
    }

    /// Apple's `partnerInternalMerchantIdentifier`: the primary key.
    public var id: String
    public var partnerMerchantName: String
    /// The integrator or merchant id whose payment processing certificate Apple encrypts to.
    public var encryptTo: String
    public var merchantURL: String?
    /// The domains registered now, in the order first registered.
    public var domainNames: [String]
    public var state: State
    /// The organisation of the API key that registered it; nil for an admin.
    public var organization: OrganizationID?
    /// SHA-256 (lowercase hex) of the domain-verification file stored when it was last registered.
    public var domainAssociationSHA256: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, partnerMerchantName: String, encryptTo: String, merchantURL: String?, domainNames: [String], state: State,
        organization: OrganizationID?, domainAssociationSHA256: String?, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.partnerMerchantName = partnerMerchantName
        self.encryptTo = encryptTo
        self.merchantURL = merchantURL
        self.domainNames = domainNames
        self.state = state
        self.organization = organization
        self.domainAssociationSHA256 = domainAssociationSHA256
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
