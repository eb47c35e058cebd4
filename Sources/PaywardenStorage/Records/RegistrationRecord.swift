import Foundation
import PaywardenPrimitives

/// A registration ID's row. The store knows it by `lookupKey`, a keyed hash of the ID the vault
/// computes, so the table alone cannot be used to redeem anything.
public struct RegistrationRecord: Sendable, Hashable {
    public var lookupKey: [UInt8]
    /// The HMAC key that computed `lookupKey`, so a rotated-out key waits for the rows it hashed;
    /// nil on rows written before 0005_vault_bindings.
    public var lookupKeyID: String?
    public var organization: OrganizationID
    public var paypageID: String
    public var createdAt: Date
    public var expiresAt: Date
    public var redemptions: Int
    /// The decrypted token, sealed; nil once the registration ended (purged or deleted), when the
    /// row stays as a tombstone so an ended ID is told apart from an unknown one.
    public var sealed: SealedPayload?
    /// When the payload was destroyed.
    public var endedAt: Date?

    public init(
        lookupKey: [UInt8], lookupKeyID: String? = nil, organization: OrganizationID, paypageID: String, createdAt: Date, expiresAt: Date,
        redemptions: Int = 0, sealed: SealedPayload?, endedAt: Date? = nil
    ) {
        self.lookupKey = lookupKey
        self.lookupKeyID = lookupKeyID
        self.organization = organization
        self.paypageID = paypageID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.redemptions = redemptions
        self.sealed = sealed
        self.endedAt = endedAt
    }

    /// Whether the registration can be redeemed at `now`.
    public func isLive(at now: Date) -> Bool { sealed != nil && expiresAt > now }
}
