import Foundation
import PaywardenPrimitives

/// A paypage: the eProtect `paypageId` a mobile app names, the merchant organisation it belongs
/// to, what it may use and the high-value token format its organisation gets.
public struct PaypageRecord: Sendable, Hashable {
    public var id: String
    public var organization: OrganizationID
    /// The Apple Pay merchant identifiers whose keys tokens posted here may be encrypted to.
    public var merchantIdentifiers: [String]
    public var reportGroups: [String]
    /// `T` or `D` (OmniToken formats).
    public var tokenFormat: String
    public var enabled: Bool
    public var createdAt: Date

    public init(
        id: String, organization: OrganizationID, merchantIdentifiers: [String], reportGroups: [String], tokenFormat: String,
        enabled: Bool = true, createdAt: Date
    ) {
        self.id = id
        self.organization = organization
        self.merchantIdentifiers = merchantIdentifiers
        self.reportGroups = reportGroups
        self.tokenFormat = tokenFormat
        self.enabled = enabled
        self.createdAt = createdAt
    }
}
