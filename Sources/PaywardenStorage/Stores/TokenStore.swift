import Foundation

/// High-value tokens: one per account number per organisation.
public protocol TokenStore: Sendable {
    /// Stores `record` unless the organisation has a token for the same fingerprint, which is then
    /// returned. `.conflict` when the token value is taken in the organisation (the vault redraws).
    func insertToken(_ record: TokenRecord) async throws(StorageError) -> TokenInsertion
    func token(_ token: String, organization: String) async throws(StorageError) -> TokenRecord?
    func token(fingerprint: [UInt8], organization: String) async throws(StorageError) -> TokenRecord?
    /// Every token standing for the merchant token `merchantTokenID` (one per organisation at most).
    func tokens(merchantTokenID: String) async throws(StorageError) -> [TokenRecord]
    /// Sets the state, and the sealed payload when given (a re-wrap or an updated expiry).
    func updateToken(
        _ token: String, organization: String, state: TokenRecord.State, sealed: SealedPayload?, at now: Date
    ) async throws(StorageError) -> TokenRecord?
}
