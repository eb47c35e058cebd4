import ApplePay
import Foundation
import PKCS11
import PaywardenPrimitives
import PaywardenStorage

/// Registration IDs: made from a token decrypted at registration, redeemed by their organisation.
extension CardVault {
    /// Stores `token` (already verified and decrypted) for `paypage`'s organisation and returns a
    /// new registration ID for it, claiming the token's transaction id in the same atomic write
    /// (``RegistrationStore/insertRegistration(_:claiming:)``): nil, with nothing stored, when the
    /// id was claimed meanwhile (a replay that raced this one past the look before the HSM).
    public func register(
        _ token: DecryptedPaymentToken, paypage: PaypageRecord, claiming claim: TransactionClaim
    ) async throws(VaultError) -> Registration? {
        let facts = try AccountFacts(payment: token.payment)
        let contents = try SealedCoding.encode(RegistrationContents(token))
        // The keys the HSM has now, not those the maintenance loop last read (it pauses while the
        // database is down): a rotated-out key is destroyed a grace of at least two refresh
        // intervals after its successor was made, so a keyring this fresh never seals under it.
        try await keyring.refreshIfOlder(than: .seconds(policy.keyRefreshInterval))
        let (sealKey, lookup) = (try keyring.current(.registrations), try keyring.current(.fingerprint))
        let created = now
        let expires = created.addingTimeInterval(policy.registrationLifetime)
        let ledgerClaim = ReplayClaimRequest(transactionID: claim.transactionID, expiry: claim.expiry, now: claim.now)
        // A collision of 18 random digits is rare; the database refuses it and a new ID is drawn.
        for _ in 0..<8 {
            let id = RegistrationID.generate()
            let lookupKey = try await lookupKey(id.value, key: lookup)
            let context = SealContext(
                kind: .registration, organization: paypage.organization, recordID: lookupKey, paypageID: paypage.id)
            let sealed = try await sealer.seal(contents, under: sealKey, context: context)
            let record = RegistrationRecord(
                lookupKey: lookupKey, lookupKeyID: lookup.id.hex, organization: paypage.organization, paypageID: paypage.id,
                createdAt: created, expiresAt: expires, sealed: sealed)
            do {
                guard try await database.insertRegistration(record, claiming: ledgerClaim) else { return nil }
                return Registration(id: id, firstSix: facts.firstSix, lastFour: facts.lastFour, network: facts.network, expiresAt: expires)
            } catch  where error.category == .conflict {
                continue
            } catch {
                _ = try await storage { () async throws(StorageError) in throw error }
            }
        }
        throw VaultError(.databaseUnavailable, "no unused registration ID was found in 8 draws; retry")
    }

    /// The payload, the token's facts and the high-value token for a live registration of
    /// `organization`. Another organisation's ID is unknown to it (877), never expired (878).
    ///
    /// One write: the redemption is counted after the HSM opened the payload, and a new account's
    /// token is stored in the same atomic write (``RegistrationStore/recordRedemption(lookupKey:now:issuing:)``),
    /// so the first redemption of an account waits for one sync, not two.
    public func redeem(_ presented: PresentedRegistrationID, organization: OrganizationID) async throws(VaultError) -> Redemption {
        let found = try await liveRegistration(presented, organization: organization)
        let (contents, policy) = try await open(found)
        let facts = try AccountFacts(paymentData: Array(contents.paymentData))
        let reference = Self.registrationReference(found.lookupKey)
        switch try await tokenLookup(for: facts, policy: policy) {
        case .existing(let issued):
            guard
                let counted = try await storage({ () async throws(StorageError) in
                    try await database.recordRedemption(lookupKey: found.lookupKey, now: now)
                }), counted.isLive(at: now)
            else { throw Self.expired }
            return Redemption(contents, record: counted, highValueToken: issued, reference: reference)
        case .new(let draft):
            let now = self.now
            var counted: RegistrationRecord?
            let issued = try await insertNewToken(draft) { record throws(StorageError) in
                let write = try await database.recordRedemption(lookupKey: found.lookupKey, now: now, issuing: record)
                counted = write.registration
                return write.token
            }
            guard let issued, let counted, counted.isLive(at: now) else { throw Self.expired }
            return Redemption(contents, record: counted, highValueToken: issued, reference: reference)
        }
    }

    /// Redeems a registration for one use and ends it in the same write: a relay's authorization,
    /// where one cryptogram authorizes once. `accept` sees the payload (read once, here, and for it
    /// to return so the caller need not read it again) before anything is written; what it refuses
    /// (a payment the upstream cannot carry) leaves the registration live and uncounted. Of two
    /// uses racing, one ends the registration and the other gets 878, though both may have issued
    /// (the same) high-value token. One look-up and one write where ``redeem(_:organization:)``
    /// then ``endRegistration(_:organization:)`` take two of each.
    public func redeemForOneUse<Accepted>(
        _ presented: PresentedRegistrationID, organization: OrganizationID, accept: (DecryptedPayment?) throws(VaultError) -> Accepted
    ) async throws(VaultError) -> (redemption: Redemption, accepted: Accepted) {
        let found = try await liveRegistration(presented, organization: organization)
        let (contents, policy) = try await open(found)
        let payment = DecryptedPayment(json: Array(contents.paymentData))
        let accepted = try accept(payment)
        let issued = try await issueToken(for: try AccountFacts(payment: payment), policy: policy)
        // A compare-and-set on the payload opened above, as every end of a row read before is.
        guard let ciphertext = found.sealed?.ciphertext,
            let taken = try await storage({ () async throws(StorageError) in
                try await database.takeRegistration(lookupKey: found.lookupKey, ciphertext: ciphertext, now: now)
            })
        else { throw Self.expired }
        let redemption = Redemption(contents, record: taken, highValueToken: issued, reference: Self.registrationReference(found.lookupKey))
        return (redemption, accepted)
    }

    /// A live registration's payload, and the policy of the paypage it was registered through.
    private func open(_ record: RegistrationRecord) async throws(VaultError) -> (RegistrationContents, OrganizationPolicy) {
        guard let sealed = record.sealed else { throw Self.expired }
        let key = try await key(.registrations, id: sealed.keyID)
        let context = SealContext(
            kind: .registration, organization: record.organization, recordID: record.lookupKey, paypageID: record.paypageID)
        let contents = try SealedCoding.decode(RegistrationContents.self, try await sealer.open(sealed, with: key, context: context))
        let paypage = try await storage { () async throws(StorageError) in try await database.paypage(id: record.paypageID) }
        guard let paypage, let policy = OrganizationPolicy(paypage: paypage) else {
            throw VaultError(.merchantNotAuthorized, "the paypage this ID was registered through no longer exists")
        }
        // A row sealed before the paypage was bound (format 1) names its paypage in a column only:
        // the token is issued under that paypage's organisation, so it must be the registration's.
        guard paypage.organization == record.organization else {
            throw VaultError(.recordUnreadable, "the registration names another organisation's paypage (the row was altered)")
        }
        return (contents, policy)
    }

    /// Ends a registration early: its payload is destroyed now, its tombstone kept. Returns the
    /// audit reference.
    @discardableResult
    public func endRegistration(_ presented: PresentedRegistrationID, organization: OrganizationID) async throws(VaultError) -> String {
        let found = try await liveRegistration(presented, organization: organization)
        guard let ciphertext = found.sealed?.ciphertext,
            try await storage({ () async throws(StorageError) in
                try await database.endRegistration(lookupKey: found.lookupKey, ciphertext: ciphertext, at: now)
            })
        else { throw Self.expired }
        return Self.registrationReference(found.lookupKey)
    }

    static func registrationReference(_ lookupKey: [UInt8]) -> String {
        "reg:" + Hex.encode(lookupKey.prefix(8))
    }

    /// The active purge: payloads of expired registrations destroyed, old tombstones deleted.
    public func purgeRegistrations() async throws(VaultError) -> RegistrationPurge {
        let now = self.now
        return try await storage { () async throws(StorageError) in
            try await database.purgeRegistrations(now: now, tombstonesEndedBefore: now.addingTimeInterval(-policy.tombstoneRetention))
        }
    }

    /// The registration row `presented` names for `organization`, live; 877 or 878 otherwise.
    private func liveRegistration(_ presented: PresentedRegistrationID, organization: OrganizationID) async throws(VaultError)
        -> RegistrationRecord
    {
        // Anything but 19 digits MOD 10+1 was never issued here: 877 without a look-up.
        guard presented.isWellFormed else {
            throw Self.notFound
        }
        // The newest look-up key first; older ones only while a rotation of the HMAC key is under way.
        // A miss re-reads the keys (at most once a second): the ID may be hashed under a key another
        // instance created since this one last looked.
        var tried: Set<KeyIdentifier> = []
        for attempt in 0..<2 {
            if attempt == 1 { try await keyring.refreshIfOlder(than: .seconds(1)) }
            for key in keyring.keys(.fingerprint) where tried.insert(key.id).inserted {
                let lookupKey = try await lookupKey(presented.value, key: key)
                let found = try await storage { () async throws(StorageError) in try await database.registration(lookupKey: lookupKey) }
                guard let record = found else { continue }
                guard record.organization == organization else { throw Self.notFound }
                guard record.isLive(at: now) else { throw Self.expired }
                return record
            }
        }
        if keyring.keys(.fingerprint).isEmpty { _ = try keyring.current(.fingerprint) }
        throw Self.notFound
    }

    static let notFound = VaultError(.registrationNotFound, "the registration ID is not known to this organisation")
    static let expired = VaultError(.registrationExpired, "the registration ID has expired or was ended")
}

extension Redemption {
    /// A redemption of `record`, whose sealed payload was `contents`.
    init(_ contents: RegistrationContents, record: RegistrationRecord, highValueToken: IssuedToken, reference: String) {
        self.init(
            paymentData: Array(contents.paymentData), version: contents.version, transactionId: contents.transactionId,
            publicKeyHash: contents.publicKeyHash, signingTime: contents.signingTime, highValueToken: highValueToken,
            redemptions: record.redemptions, expiresAt: record.expiresAt, reference: reference)
    }
}
