import Foundation
import PaywardenPrimitives

/// High-value tokens: one per account number per organisation.
public protocol TokenStore: Sendable {
    /// Stores `record` unless the organisation has a token for the same fingerprint, which is then
    /// returned. `.conflict` when the token value is taken in the organisation (the vault redraws).
    func insertToken(_ record: TokenRecord) async throws(StorageError) -> TokenInsertion
    func token(_ token: String, organization: OrganizationID) async throws(StorageError) -> TokenRecord?
    func token(fingerprint: [UInt8], organization: OrganizationID) async throws(StorageError) -> TokenRecord?
    /// Every token standing for the merchant token `merchantTokenID` (one per organisation at most).
    func tokens(merchantTokenID: String) async throws(StorageError) -> [TokenRecord]
    /// Sets the state, and the sealed payload when given (administration and tests; the vault's
    /// own updates are the compare-and-sets below, which never write the state).
    func updateToken(
        _ token: String, organization: OrganizationID, state: TokenRecord.State, sealed: SealedPayload?, at now: Date
    ) async throws(StorageError) -> TokenRecord?
    /// Replaces the sealed payload of an active token (an updated expiry) only while the row still
    /// holds `previous` (compared by its ciphertext, which a re-wrap leaves as it is). Never writes
    /// the state: an unlink that lands between the vault's read and this write stays. False when
    /// the row is unknown, no longer active, or holds another payload.
    func replaceTokenPayload(
        _ token: String, organization: OrganizationID, replacing previous: SealedPayload, with sealed: SealedPayload, at now: Date
    ) async throws(StorageError) -> Bool
    /// Deletes the row, and with it the sealed account number; false when unknown.
    func deleteToken(_ token: String, organization: OrganizationID) async throws(StorageError) -> Bool

    // MARK: Merchant-token events

    /// The active tokens of the merchant token become `.unlinked` (updated_at = now): those of
    /// `organization` only when one is given (a tenant's own unlink: two organisations may share
    /// an Apple merchant id), every organisation's when nil (Apple's UNLINK event: the merchant
    /// token is dead for all). Returns how many changed (0 when they already were: idempotent).
    func unlinkTokens(merchantTokenID: String, organization: OrganizationID?, at now: Date) async throws(StorageError) -> Int
    /// Records a merchant token's metadata (opaque JSON) on one of its active or unlinked tokens,
    /// by a compare-and-set on the metadata its caller read and merged into (`expected`, nil for
    /// none): false, writing nothing, when another event's metadata landed meanwhile, or the token
    /// is unknown or deleted. An active row's updated_at becomes `now`; an unlinked row keeps its
    /// time of unlinking, from which its retention runs.
    func replaceMerchantTokenMetadata(
        _ token: String, organization: OrganizationID, replacing expected: [UInt8]?, with metadata: [UInt8], at now: Date
    ) async throws(StorageError) -> Bool
    /// Deletes up to `limit` unlinked tokens whose updated_at is before `before`, the longest
    /// unlinked first (their sealed account numbers go with them); returns how many.
    func deleteUnlinkedTokens(before: Date, limit: Int) async throws(StorageError) -> Int

    // MARK: Key rotation

    /// Up to `limit` tokens whose account number the key-encrypting key `keyID` sealed.
    func tokens(sealedWith keyID: String, limit: Int) async throws(StorageError) -> [TokenRecord]
    /// Replaces the sealed payload, only while it is still sealed under `previousKeyID`.
    func resealToken(
        _ token: String, organization: OrganizationID, previousKeyID: String, sealed: SealedPayload
    ) async throws(StorageError) -> Bool
    /// Up to `limit` tokens whose fingerprint the HMAC key `keyID` computed.
    func tokens(fingerprintedWith keyID: String, limit: Int) async throws(StorageError) -> [TokenRecord]
    /// Replaces the fingerprint, only while it is still computed under `previousKeyID`;
    /// `.conflict` when the organisation already has a token with the new fingerprint.
    func refingerprintToken(
        _ token: String, organization: OrganizationID, previousKeyID: String, fingerprint: [UInt8], fingerprintKeyID: String
    ) async throws(StorageError) -> Bool
}
