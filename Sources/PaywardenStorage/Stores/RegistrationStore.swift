import Foundation

/// Registration IDs: short-lived, redeemable by their organisation, tombstoned when they end.
public protocol RegistrationStore: Sendable {
    /// Stores a new registration; `.conflict` when `lookupKey` exists (the vault redraws the ID).
    func insertRegistration(_ record: RegistrationRecord) async throws(StorageError)
    /// Stores a new registration and claims `claim`'s transaction id in one atomic write, so the
    /// token it was made from decrypts once and a crash keeps both or neither. False, with nothing
    /// stored, when the id is claimed and live (a replay that raced the look before the HSM);
    /// `.conflict` when `lookupKey` exists (nothing stored or claimed: the vault redraws the ID).
    func insertRegistration(_ record: RegistrationRecord, claiming claim: ReplayClaimRequest) async throws(StorageError) -> Bool
    /// Stores `record` in place of whatever row (live or a tombstone) has its `lookupKey`: for a
    /// look-up key the vault derives from something the client holds, not drawn at random (a
    /// cryptogram held for a high-value token, which a newer one for the same token replaces).
    func replaceRegistration(_ record: RegistrationRecord) async throws(StorageError)
    func registration(lookupKey: [UInt8]) async throws(StorageError) -> RegistrationRecord?
    /// Counts a redemption, atomically, when the registration is live at `now`; returns the row
    /// as it stands afterwards (unchanged when it was not live), nil when unknown.
    func recordRedemption(lookupKey: [UInt8], now: Date) async throws(StorageError) -> RegistrationRecord?
    /// Counts a redemption as ``recordRedemption(lookupKey:now:)`` does and, in the same atomic
    /// write and only when it counted one, stores `token` unless the organisation has a token for
    /// its account (``TokenStore/insertToken(_:)``): one write for the first redemption of an
    /// account, where a count and an insert took two. `.conflict` when the token value is taken
    /// (nothing written: the vault redraws).
    func recordRedemption(lookupKey: [UInt8], now: Date, issuing token: TokenRecord) async throws(StorageError) -> RedemptionWrite
    /// Counts a redemption and ends the registration in one atomic step, when it is live at `now`
    /// and still holds the payload sealed as `ciphertext`, the one its caller read and opened (a
    /// single-use redemption: of two racing, one takes it); returns the row as it stands afterwards,
    /// its payload destroyed, or nil when it was unknown, ended, expired or holds another payload.
    func takeRegistration(lookupKey: [UInt8], ciphertext: [UInt8], now: Date) async throws(StorageError) -> RegistrationRecord?
    /// Destroys the payload now and keeps the tombstone, when the row still holds the payload sealed
    /// as `ciphertext` (what its caller read: a payload that replaced it meanwhile is left alone);
    /// false when unknown, already ended or replaced. A re-wrap keeps the ciphertext, so it does not
    /// make the caller's read stale.
    func endRegistration(lookupKey: [UInt8], ciphertext: [UInt8], at now: Date) async throws(StorageError) -> Bool
    /// The active purge: destroys the payloads of registrations expired at `now` (keeping their
    /// tombstones) and deletes tombstones that ended before `tombstonesEndedBefore`.
    func purgeRegistrations(now: Date, tombstonesEndedBefore: Date) async throws(StorageError) -> RegistrationPurge

    // MARK: Key rotation

    /// Up to `limit` registrations whose payload the key-encrypting key `keyID` sealed (ended ones
    /// have no payload and never appear), for the re-wrap job.
    func registrations(sealedWith keyID: String, limit: Int) async throws(StorageError) -> [RegistrationRecord]
    /// Replaces the sealed payload, only while the row is still sealed under `previousKeyID` (a
    /// row ended or re-wrapped meanwhile is left alone); false when nothing was replaced.
    func resealRegistration(lookupKey: [UInt8], previousKeyID: String, sealed: SealedPayload) async throws(StorageError) -> Bool
    /// Rows, tombstones included, whose look-up key the HMAC key `keyID` computed, and those that
    /// do not say (written before 0005_vault_bindings or by an older build): what still depends on
    /// the key, whenever the rows were made.
    func registrationCount(lookupKeyID keyID: String) async throws(StorageError) -> Int
}

/// What a redemption that may issue a token wrote
/// (``RegistrationStore/recordRedemption(lookupKey:now:issuing:)``).
public struct RedemptionWrite: Sendable {
    /// The row as it stands afterwards (unchanged when it was not live); nil when unknown.
    public var registration: RegistrationRecord?
    /// The organisation's token for the account; nil when no redemption was counted.
    public var token: TokenInsertion?

    public init(registration: RegistrationRecord?, token: TokenInsertion?) {
        self.registration = registration
        self.token = token
    }
}

/// What a purge did.
public struct RegistrationPurge: Sendable, Hashable {
    public var payloadsDestroyed: Int
    public var tombstonesDeleted: Int

    public init(payloadsDestroyed: Int, tombstonesDeleted: Int) {
        self.payloadsDestroyed = payloadsDestroyed
        self.tombstonesDeleted = tombstonesDeleted
    }
}
