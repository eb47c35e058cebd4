import Foundation
import PaywardenPrimitives
import PaywardenStorage

/// A registration just made: the ID (shown once, to the app) and what eProtect's reply may show.
public struct Registration: Sendable {
    public let id: RegistrationID
    public let firstSix: String
    public let lastFour: String
    public let network: CardNetwork
    public let expiresAt: Date
}

/// A high-value token as issued or found: 801 when the account number was new to the
/// organisation, 802 when it had a token already.
public struct IssuedToken: Sendable {
    public let token: String
    public let format: HighValueTokenFormat
    public let isNew: Bool
    public let kind: TokenRecord.AccountKind
    public let merchantTokenIdentifier: String?
    public let firstSix: String
    public let network: CardNetwork

    public var responseCode: String { isNew ? "801" : "802" }
    public var message: String { isNew ? "Account number was successfully registered" : "Account number was previously registered" }
}

/// A redeemed registration: the payload exactly as Apple sent it, the token's facts and the
/// high-value token.
public struct Redemption: Sendable {
    public let paymentData: [UInt8]
    public let version: String
    public let transactionId: String
    public let publicKeyHash: String
    public let signingTime: Date
    public let highValueToken: IssuedToken
    public let redemptions: Int
    public let expiresAt: Date
    /// Names the registration in audit lines without being its ID: the start of its keyed look-up key.
    public let reference: String
}

/// A detokenized high-value token: the account number and expiry, never a cryptogram.
public struct DetokenizedAccount: Sendable {
    public let accountNumber: Sensitive<String>
    public let expirationDate: String
    public let kind: TokenRecord.AccountKind
    public let merchantTokenIdentifier: String?
    /// A reference to the token for audit lines: the start of its keyed fingerprint, which names
    /// the token without revealing it or the account number.
    public let reference: String
}

/// What applying a merchant-token event did to the vault, for the event's record and admins.
public struct MerchantTokenEffect: Sendable, Hashable {
    /// For people: "unlinked 2 tokens", "metadata recorded on 1 token", "recorded; no vault change for …".
    public let summary: String
    /// How many tokens changed.
    public let tokens: Int

    public init(summary: String, tokens: Int) {
        self.summary = summary
        self.tokens = tokens
    }
}
