import Foundation
import PaywardenPrimitives
import PaywardenStorage

/// High-value tokens: one per account number per organisation, found by a keyed fingerprint.
extension CardVault {
    /// The organisation's token for the account in `facts`: the existing one (802) or a new one (801).
    public func issueToken(for facts: AccountFacts, policy: OrganizationPolicy) async throws(VaultError) -> IssuedToken {
        switch try await tokenLookup(for: facts, policy: policy) {
        case .existing(let issued):
            return issued
        case .new(let draft):
            let issued = try await insertNewToken(draft) { record throws(StorageError) in try await database.insertToken(record) }
            guard let issued else { throw VaultError(.databaseUnavailable, "the token was not stored; retry") }
            return issued
        }
    }

    /// What the organisation has for an account: its token, or what a new one needs.
    enum TokenLookup {
        case existing(IssuedToken)
        case new(NewTokenDraft)
    }

    /// A token yet to be drawn for an account: everything but its value and its seal.
    struct NewTokenDraft {
        let facts: AccountFacts
        let policy: OrganizationPolicy
        let fingerprint: [UInt8]
        let fingerprintKeyID: String
    }

    /// Looks the account up by its fingerprint, under the current key first and an older one only
    /// while a fingerprint-key rotation runs. An existing token's expiry is kept current.
    func tokenLookup(for facts: AccountFacts, policy: OrganizationPolicy) async throws(VaultError) -> TokenLookup {
        let organization = policy.organization
        // Before a new token can be issued every HMAC key must be known, or an account fingerprinted
        // under a key another instance just created would get a second token.
        try await keyring.refreshIfOlder(than: .seconds(1))
        let fingerprintKeys = keyring.keys(.fingerprint)
        guard let current = fingerprintKeys.first else {
            _ = try keyring.current(.fingerprint)
            throw Self.notFound
        }
        let fingerprint = try await fingerprint(facts.accountNumber.revealed, organization: organization, key: current)
        for key in fingerprintKeys {
            let candidate =
                key == current
                ? fingerprint : try await self.fingerprint(facts.accountNumber.revealed, organization: organization, key: key)
            if let existing = try await storage({ () async throws(StorageError) in
                try await database.token(fingerprint: candidate, organization: organization)
            }) {
                return .existing(try await issuedExisting(existing, facts: facts, format: policy.tokenFormat))
            }
        }
        return .new(NewTokenDraft(facts: facts, policy: policy, fingerprint: fingerprint, fingerprintKeyID: current.id.hex))
    }

    /// Draws a token value for `draft`, seals the account under it and stores it with `insert`,
    /// drawing again while the value is taken in the organisation. Formats keep the first six and
    /// last four, so few digits are random (5 for a 16-digit format T token). `insert` may find the
    /// account tokenized meanwhile (by another request): that token is the answer. Nil when
    /// `insert` wrote nothing (the write that was to carry the token was refused).
    func insertNewToken(
        _ draft: NewTokenDraft, _ insert: (TokenRecord) async throws(StorageError) -> TokenInsertion?
    ) async throws(VaultError) -> IssuedToken? {
        let (facts, policy) = (draft.facts, draft.policy)
        let sealKey = try keyring.current(.tokens)
        let contents = try SealedCoding.encode(
            TokenContents(accountNumber: facts.accountNumber.revealed, expirationDate: facts.expirationDate))
        guard let digits = Luhn.digits(facts.accountNumber.revealed) else { throw VaultError(.invalidAccountNumber, "not digits") }
        let created = now
        for _ in 0..<32 {
            let token = RandomDigits.string(policy.tokenFormat.generate(for: digits))
            let context = SealContext(kind: .token, organization: policy.organization, recordID: Array(token.utf8))
            let record = TokenRecord(
                organization: policy.organization, token: token, fingerprint: draft.fingerprint,
                fingerprintKeyID: draft.fingerprintKeyID, accountKind: facts.kind, merchantTokenID: facts.merchantTokenIdentifier,
                sealed: try await sealer.seal(contents, under: sealKey, context: context), createdAt: created,
                merchantTokenMetadata: facts.merchantTokenMetadata)
            let insertion: TokenInsertion?
            do {
                insertion = try await insert(record)
            } catch  where error.category == .conflict {
                continue
            } catch {
                _ = try await storage { () async throws(StorageError) in throw error }
                continue
            }
            switch insertion {
            case nil: return nil
            case .inserted(let stored)?: return issued(stored, isNew: true, facts: facts, format: policy.tokenFormat)
            case .existing(let stored)?:
                // Another request tokenized the account meanwhile: the row it wrote must seal this
                // account too, as a row found by its fingerprint must.
                return try await issuedExisting(stored, facts: facts, format: policy.tokenFormat)
            }
        }
        throw VaultError(.databaseUnavailable, "no unused token value was found in 32 draws for this account's first six and last four")
    }

    /// An existing token handed out again: not when unlinked, its expiry brought up to date.
    private func issuedExisting(_ record: TokenRecord, facts: AccountFacts, format: HighValueTokenFormat) async throws(VaultError)
        -> IssuedToken
    {
        try Self.refuseUnlinked(record)
        try await keepExpiryCurrent(record, facts: facts)
        return issued(record, isNew: false, facts: facts, format: format)
    }

    /// The organisation's token for the account was unlinked by Apple: its merchant token is dead,
    /// so the account is not handed back as usable (nor revived) until the purge destroys the row;
    /// the same account number arriving after that gets a new token.
    private static func refuseUnlinked(_ record: TokenRecord) throws(VaultError) {
        guard record.state == .unlinked else { return }
        throw VaultError(.tokenUnlinked, "the merchant token behind this account's token was unlinked; it can no longer be tokenized")
    }

    /// A known account number registered again with a new expiry: the token keeps the newest one
    /// (Worldpay's tokens lose the expiry otherwise), re-sealed under the current key.
    private func keepExpiryCurrent(_ record: TokenRecord, facts: AccountFacts) async throws(VaultError) {
        let context = SealContext(kind: .token, organization: record.organization, recordID: Array(record.token.utf8))
        let stored = try SealedCoding.decode(
            TokenContents.self,
            try await sealer.open(record.sealed, with: try await key(.tokens, id: record.sealed.keyID), context: context))
        // The row was found by its fingerprint, a column the seal does not cover: a row given
        // another account's fingerprint must not stand for this account.
        guard stored.accountNumber == facts.accountNumber.revealed else {
            throw VaultError(.recordUnreadable, "the token found for this account number seals another one (the row was altered)")
        }
        guard stored.expirationDate != facts.expirationDate else { return }
        let contents = try SealedCoding.encode(TokenContents(accountNumber: stored.accountNumber, expirationDate: facts.expirationDate))
        let sealed = try await sealer.seal(contents, under: try keyring.current(.tokens), context: context)
        // A compare-and-set on the payload read two HSM round trips ago, which never writes the
        // state: an unlink that landed meanwhile stays, and the token is not handed out.
        let replaced = try await storage { () async throws(StorageError) in
            try await database.replaceTokenPayload(
                record.token, organization: record.organization, replacing: record.sealed, with: sealed, at: now)
        }
        guard !replaced else { return }
        guard
            let latest = try await storage({ () async throws(StorageError) in
                try await database.token(record.token, organization: record.organization)
            }), latest.state != .deleted
        else { throw Self.tokenNotFound }
        try Self.refuseUnlinked(latest)
        // Still active: another registration or the re-wrap job changed the payload meanwhile; the
        // account's next registration brings the expiry again.
    }

    private func issued(_ record: TokenRecord, isNew: Bool, facts: AccountFacts, format: HighValueTokenFormat) -> IssuedToken {
        IssuedToken(
            token: record.token, format: format, isNew: isNew, kind: record.accountKind, merchantTokenIdentifier: record.merchantTokenID,
            firstSix: facts.firstSix, network: facts.network)
    }

    /// The account number and expiry behind `token`, for `organization` only.
    public func detokenize(_ token: String, organization: OrganizationID) async throws(VaultError) -> DetokenizedAccount {
        let record = try await activeToken(token, organization: organization)
        let key = try await key(.tokens, id: record.sealed.keyID)
        let context = SealContext(kind: .token, organization: organization, recordID: Array(record.token.utf8))
        let contents = try SealedCoding.decode(TokenContents.self, try await sealer.open(record.sealed, with: key, context: context))
        return DetokenizedAccount(
            accountNumber: Sensitive(contents.accountNumber, hint: "account number"), expirationDate: contents.expirationDate,
            kind: record.accountKind, merchantTokenIdentifier: record.merchantTokenID, reference: Self.reference(record.fingerprint))
    }

    /// The kind of account behind `token`, for `organization` only, read from the token's record:
    /// nothing is decrypted, so a use the kind rules out is refused before any detokenization.
    /// Unknown, deleted and another organisation's tokens are `token_not_found`; unlinked ones
    /// `token_unlinked`, as for ``detokenize(_:organization:)``.
    public func storedTokenFacts(_ token: String, organization: OrganizationID) async throws(VaultError) -> StoredTokenFacts {
        let record = try await activeToken(token, organization: organization)
        return StoredTokenFacts(
            kind: record.accountKind, merchantTokenIdentifier: record.merchantTokenID, reference: Self.reference(record.fingerprint))
    }

    /// Deletes `token` and its sealed account number; returns the audit reference.
    @discardableResult
    public func deleteToken(_ token: String, organization: OrganizationID) async throws(VaultError) -> String {
        guard Self.isWellFormedToken(token),
            let record = try await storage({ () async throws(StorageError) in try await database.token(token, organization: organization) }
            ),
            try await storage({ () async throws(StorageError) in try await database.deleteToken(token, organization: organization) })
        else { throw Self.tokenNotFound }
        return Self.reference(record.fingerprint)
    }

    private func activeToken(_ token: String, organization: OrganizationID) async throws(VaultError) -> TokenRecord {
        guard Self.isWellFormedToken(token),
            let record = try await storage({ () async throws(StorageError) in try await database.token(token, organization: organization) })
        else { throw Self.tokenNotFound }
        switch record.state {
        case .active: return record
        case .unlinked: throw VaultError(.tokenUnlinked, "the merchant token behind this token was unlinked; it can no longer be used")
        case .deleted: throw Self.tokenNotFound
        }
    }

    /// 13 to 19 digits, MOD 10+1: anything else was never issued here.
    public static func isWellFormedToken(_ token: String) -> Bool {
        HighValueTokenFormat.accountNumberLengths.contains(token.utf8.count) && Luhn.isModTenPlusOne(token)
    }

    /// The first 8 bytes of a keyed fingerprint, in hex: names a token in audit lines and logs
    /// without revealing it (the token keeps the account number's first six and last four).
    static func reference(_ fingerprint: [UInt8]) -> String {
        "fp:" + Hex.encode(fingerprint.prefix(8))
    }

    static let tokenNotFound = VaultError(.tokenNotFound, "the token is not known to this organisation")
}
