import Foundation
import PaywardenPrimitives

/// A high-value token's row: the token, the keyed hash of its account number (the look-up that
/// makes tokens static per account and organisation), and the account number sealed.
public struct TokenRecord: Sendable, Hashable {
    /// A device account number (Apple Pay DPAN) or a merchant token's account number (MPAN).
    public enum AccountKind: String, Sendable, CaseIterable {
        case devicePAN = "dpan"
        case merchantPAN = "mpan"
    }

    public enum State: String, Sendable, CaseIterable {
        case active
        /// The merchant token behind it was unlinked by Apple's event; detokenizing is refused.
        case unlinked
        case deleted
    }

    public var organization: OrganizationID
    public var token: String
    /// HMAC-SHA256 of the account number under `fingerprintKeyID`, computed in the HSM.
    public var fingerprint: [UInt8]
    public var fingerprintKeyID: String
    public var accountKind: AccountKind
    public var merchantTokenID: String?
    public var state: State
    public var sealed: SealedPayload
    public var createdAt: Date
    /// When the row last changed; for an unlinked token, when it was unlinked (its retention
    /// runs from then).
    public var updatedAt: Date
    /// The merchant token's latest metadata as Apple's events gave it (opaque JSON: card art
    /// URLs, expiry, `fpanSuffix`), nil until an event brings some.
    public var merchantTokenMetadata: [UInt8]?

    public init(
        organization: OrganizationID, token: String, fingerprint: [UInt8], fingerprintKeyID: String, accountKind: AccountKind,
        merchantTokenID: String?, state: State = .active, sealed: SealedPayload, createdAt: Date, updatedAt: Date? = nil,
        merchantTokenMetadata: [UInt8]? = nil
    ) {
        self.organization = organization
        self.token = token
        self.fingerprint = fingerprint
        self.fingerprintKeyID = fingerprintKeyID
        self.accountKind = accountKind
        self.merchantTokenID = merchantTokenID
        self.state = state
        self.sealed = sealed
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        self.merchantTokenMetadata = merchantTokenMetadata
    }
}

/// What inserting a token found.
public enum TokenInsertion: Sendable, Hashable {
    /// The account number was new to the organisation: this token now stands for it.
    case inserted(TokenRecord)
    /// The organisation already had a token for the account number; it is returned unchanged.
    case existing(TokenRecord)
}
