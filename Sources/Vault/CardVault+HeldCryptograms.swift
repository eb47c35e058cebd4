import ApplePay
import Foundation
import PaywardenPrimitives
import PaywardenStorage

/// Cryptograms held for a high-value token's first use (Radial's decrypt sequence, seed 003: the
/// app decrypts, gets the token, then authorizes with it). The decrypted payload is sealed as a
/// registration is, under the registrations' key-encrypting key, for the registrations' lifetime
/// (24 hours), and the purge, the re-wrap job and the HMAC key's retirement treat it as one. It is
/// found by a keyed hash of the token instead of a registration ID, and redeemed once: the use that
/// ends the row (still holding the payload it opened) owns the cryptogram, a later or concurrent
/// one finds none.
extension CardVault {
    /// Stands for a paypage in the held payload's row and seal: none was involved (the Radial
    /// decrypt API), and no paypage can have this id (paypage ids are letters and digits only).
    public static let heldCryptogramPaypageID = "(radial-decryptblob)"

    /// Seals `token`'s payload for the first authorization that presents `issued` in
    /// `organization`; a newer payload for the same token replaces an older one (its cryptogram is
    /// the one the app will use). Returns when it expires.
    @discardableResult
    public func holdCryptogram(
        of token: DecryptedPaymentToken, for issued: IssuedToken, organization: OrganizationID
    ) async throws(VaultError) -> Date {
        let contents = try SealedCoding.encode(RegistrationContents(token))
        // As for a registration: the HSM's current keys, never one a grace away from destruction.
        try await keyring.refreshIfOlder(than: .seconds(policy.keyRefreshInterval))
        let (sealKey, lookup) = (try keyring.current(.registrations), try keyring.current(.fingerprint))
        let lookupKey = try await lookupKey(Self.heldCryptogramName(issued.token, organization: organization), key: lookup)
        let context = SealContext(
            kind: .registration, organization: organization, recordID: lookupKey, paypageID: Self.heldCryptogramPaypageID)
        let sealed = try await sealer.seal(contents, under: sealKey, context: context)
        let created = now
        let expires = created.addingTimeInterval(policy.registrationLifetime)
        let record = RegistrationRecord(
            lookupKey: lookupKey, lookupKeyID: lookup.id.hex, organization: organization, paypageID: Self.heldCryptogramPaypageID,
            createdAt: created, expiresAt: expires, sealed: sealed)
        try await storage { () async throws(StorageError) in try await database.replaceRegistration(record) }
        return expires
    }

    /// The payload held for `token` in `organization`, ended as it is handed out; nil when none is
    /// held, it expired, was purged or was taken already.
    public func takeHeldCryptogram(for token: String, organization: OrganizationID) async throws(VaultError) -> [UInt8]? {
        try await takeHeldCryptogram(for: token, organization: organization) { payload throws(VaultError) in payload }
    }

    /// The same, `accept` first turning the opened payload into what is used, or refusing it: a
    /// refusal leaves the payload held (a relay request that names no usable entry of a
    /// multi-merchant payment spends nothing).
    public func takeHeldCryptogram<Accepted>(
        for token: String, organization: OrganizationID, accept: ([UInt8]) throws(VaultError) -> Accepted
    ) async throws(VaultError) -> Accepted? {
        // The newest look-up key first: a row hashed under an older key during a rotation is still found.
        for key in keyring.keys(.fingerprint) {
            let lookupKey = try await lookupKey(Self.heldCryptogramName(token, organization: organization), key: key)
            let found = try await storage { () async throws(StorageError) in try await database.registration(lookupKey: lookupKey) }
            guard let record = found else { continue }
            guard record.organization == organization, record.paypageID == Self.heldCryptogramPaypageID, record.isLive(at: now),
                let sealed = record.sealed
            else { return nil }
            // Opened before it is claimed: an HSM that cannot open it now leaves it for a retry,
            // where opening it after the claim would have spent it on a failure.
            let sealKey = try await self.key(.registrations, id: sealed.keyID)
            let context = SealContext(
                kind: .registration, organization: organization, recordID: lookupKey, paypageID: Self.heldCryptogramPaypageID)
            let contents = try SealedCoding.decode(
                RegistrationContents.self, try await sealer.open(sealed, with: sealKey, context: context))
            let accepted = try accept(Array(contents.paymentData))
            // Ending it is the claim: of two uses racing, one ends it and the other gets no cryptogram.
            // A compare-and-set on the payload read: one card always gets the same token, so a newer
            // decryptblob may have replaced the row since, and that cryptogram is neither ended nor
            // taken for the one opened here.
            guard
                try await storage({ () async throws(StorageError) in
                    try await database.endRegistration(lookupKey: lookupKey, ciphertext: sealed.ciphertext, at: now)
                })
            else { return nil }
            return accepted
        }
        return nil
    }

    /// What the look-up key hashes: never 19 digits, so no registration ID presented to
    /// redemption (checked to be 19 digits first) can find the row.
    private static func heldCryptogramName(_ token: String, organization: OrganizationID) -> String {
        "held-cryptogram:\(organization.rawValue.utf8.count):\(organization.rawValue):\(token)"
    }
}
