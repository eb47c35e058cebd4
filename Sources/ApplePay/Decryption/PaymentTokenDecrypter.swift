import Crypto
import Foundation
import PaywardenPrimitives

/// Verifies and decrypts Apple Pay payment tokens.
///
/// Order matters: nothing is decrypted until every signature step passed; a transaction id is
/// claimed only for a token Apple verifiably signed (so forgeries cannot burn real ids), and
/// given back when the failure was the HSM's, not the token's.
public final class PaymentTokenDecrypter: Sendable {
    public let verifier: TokenSignatureVerifier
    private let directory: any MerchantKeyDirectory
    private let operations: any MerchantKeyOperations
    private let replayCache: any ReplayCache
    private let clock: @Sendable () -> Date

    public init(
        verifier: TokenSignatureVerifier, directory: any MerchantKeyDirectory, operations: any MerchantKeyOperations,
        replayCache: (any ReplayCache)? = nil, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.verifier = verifier
        self.directory = directory
        self.operations = operations
        self.replayCache = replayCache ?? InMemoryReplayCache(signingTimeWindow: verifier.signingTimeWindow)
        self.clock = clock
    }

    /// Decrypts a `PKPaymentToken` or its `paymentData` (UTF-8 JSON).
    /// - Parameter at: evaluate the signature as of this time instead of now (`--at`).
    /// - Parameter merchantIdentifierHashes: when given, a token whose key belongs to any other
    ///   merchant identifier is refused after verification and before its transaction id is claimed.
    /// - Parameter attempt: lets the caller give up on this decryption while it runs without
    ///   burning the token's transaction id (see ``DecryptionAttempt``).
    public func decrypt(
        json: [UInt8], at: Date? = nil, merchantIdentifierHashes: Set<String>? = nil, attempt: DecryptionAttempt? = nil
    ) async throws(PaymentTokenError) -> DecryptedPaymentToken {
        try await decrypt(try PaymentToken(json: json), at: at, merchantIdentifierHashes: merchantIdentifierHashes, attempt: attempt)
    }

    public func decrypt(
        _ token: PaymentToken, at: Date? = nil, merchantIdentifierHashes: Set<String>? = nil, attempt: DecryptionAttempt? = nil
    ) async throws(PaymentTokenError) -> DecryptedPaymentToken {
        let verified = try await verify(token, at: at, merchantIdentifierHashes: merchantIdentifierHashes)
        // Claimed before the HSM is asked; the claim's sync runs while the HSM works.
        let claim: ReplayClaim
        do {
            claim = try await replayCache.claim(token.header.transactionID, until: verified.claim.expiry, now: verified.claim.now)
        } catch {
            // Never a decryption without the replay check.
            throw Self.ledgerUnavailable
        }
        guard claim.isNew else { throw replayed(token) }
        if let attempt, !attempt.recordClaim(token.header.transactionID) {
            await replayCache.release(token.header.transactionID)
            throw Self.timedOut
        }
        let decrypted: DecryptedPaymentToken
        do {
            decrypted = try await open(token, verified)
        } catch {
            // An HSM failure after full verification is retryable: the id is given back (unless the
            // caller abandoned the attempt and gave it back already). A failed release leaves it
            // claimed until it expires: the token is then refused, never decrypted twice.
            if error.code == .hsmUnavailable || error.code == .overloaded, attempt?.takeClaimForRelease() ?? true {
                await replayCache.release(token.header.transactionID)
            }
            throw error
        }
        // The plaintext leaves only once the claim survives a crash. A claim that cannot be made
        // durable may or may not be in the ledger: it is not given back (a retry may be refused,
        // never decrypted twice).
        do {
            try await replayCache.confirm(claim)
        } catch {
            throw Self.ledgerUnavailable
        }
        return decrypted
    }

    /// Verifies and decrypts `json`, then hands the result to `store`, which claims the token's
    /// transaction id in the same atomic write that keeps what it made of the payload (a vault
    /// registration: a crash keeps both or neither, and one write's sync serves both). A replay
    /// is refused before the HSM is asked by a look at the cache; a replay that races this one
    /// past that look is refused by the claim in `store` (`.replayed`), and its payload is dropped.
    /// - Parameter store: runs once the payload is decrypted.
    public func decrypt<Stored: Sendable>(
        json: [UInt8], at: Date? = nil, merchantIdentifierHashes: Set<String>? = nil, attempt: DecryptionAttempt? = nil,
        storingWithClaim store: (DecryptedPaymentToken, TransactionClaim) async -> ClaimedStore<Stored>
    ) async throws(PaymentTokenError) -> Stored {
        let token = try PaymentToken(json: json)
        let verified = try await verify(token, at: at, merchantIdentifierHashes: merchantIdentifierHashes)
        let claimed: Bool
        do {
            claimed = try await replayCache.isClaimed(token.header.transactionID, now: verified.claim.now)
        } catch {
            throw Self.ledgerUnavailable
        }
        guard !claimed else { throw replayed(token) }
        let decrypted = try await open(token, verified)
        // A caller that gave up (an HSM deadline) gets nothing stored: its client retries.
        if let attempt, attempt.isAbandoned { throw Self.timedOut }
        let stored: Stored
        switch await store(decrypted, verified.claim) {
        case .replayed: throw replayed(token)
        // Nothing claimed: nothing to give back, even when abandoned (another attempt's claim of
        // the same id may be in the ledger by now).
        case .notStored(let answer): return answer
        case .stored(let kept): stored = kept
        }
        if let attempt, !attempt.recordClaim(token.header.transactionID) {
            // Abandoned while storing: the claim is given back so the retry can decrypt it; what
            // was stored is never handed to anyone (a registration ID nobody received expires).
            await replayCache.release(token.header.transactionID)
            throw Self.timedOut
        }
        return stored
    }

    /// A token that passed every check before decryption, and the key that opens it.
    private struct VerifiedToken {
        let key: MerchantKeyReference
        let signingTime: Date
        let claim: TransactionClaim
    }

    /// Every signature step, the key by `publicKeyHash`, and the merchant check.
    private func verify(
        _ token: PaymentToken, at: Date?, merchantIdentifierHashes: Set<String>?
    ) async throws(PaymentTokenError) -> VerifiedToken {
        let now = at ?? clock()
        let verification = await verifier.verify(token, now: now)
        if let failure = verification.failure { throw failure }
        guard let signingTime = verification.signingTime else { throw .signature("the signing time is missing") }

        guard let key = directory.key(forPublicKeyHash: token.header.publicKeyHash) else {
            if directory.hasUnrecordedKey(forPublicKeyHash: token.header.publicKeyHash) {
                // An API caller reads this too: it names no key id; `paywarden keys list` does, for the operator.
                throw PaymentTokenError(
                    .unknownPublicKeyHash,
                    "a key in the HSM has publicKeyHash \(token.publicKeyHashBase64), but this service's database has no record of it: "
                        + "its operator must copy the database it was made with, or adopt the key (`paywarden keys list` names it)")
            }
            throw PaymentTokenError(
                .unknownPublicKeyHash,
                "no key in the HSM has publicKeyHash \(token.publicKeyHashBase64); was the token encrypted to a merchant identity "
                    + "certificate, to a destroyed key, or to another processor's key?"
            )
        }
        guard key.version == token.version else {
            throw PaymentTokenError(
                .decryptionFailed,
                "publicKeyHash \(token.publicKeyHashBase64) names a \(key.version == .ecV1 ? "EC" : "RSA") key, but the token is "
                    + "\(token.version.rawValue)"
            )
        }
        // Refused before the claim: no transaction id is spent on a token this service can never decrypt.
        if let missing = operations.missingCapability(for: token.version) {
            throw PaymentTokenError(.hsmCapabilityMissing, "this service cannot decrypt \(token.version.rawValue) tokens: \(missing)")
        }
        if let merchantIdentifierHashes, !merchantIdentifierHashes.contains(Hex.encode(key.merchantIdentifierHash)) {
            throw PaymentTokenError(
                .merchantNotAuthorized, "the token is encrypted to a key of a merchant identifier this paypage or organisation does not use"
            )
        }
        let expiry = signingTime.addingTimeInterval(verifier.signingTimeWindow)
        return VerifiedToken(
            key: key, signingTime: signingTime,
            claim: TransactionClaim(transactionID: token.header.transactionID, expiry: expiry, now: now))
    }

    private func replayed(_ token: PaymentToken) -> PaymentTokenError {
        PaymentTokenError(
            .replayedTransaction,
            "transaction \(token.transactionIDHex) was already decrypted within the last \(Int(verifier.signingTimeWindow)) s; a "
                + "token is decrypted once"
        )
    }

    private static let ledgerUnavailable = PaymentTokenError(
        .databaseUnavailable, "the replay ledger cannot be reached, so the token was not decrypted; retry shortly")
    private static let timedOut = PaymentTokenError(.hsmUnavailable, "the HSM did not answer in time; retry shortly")

    /// The payload of a verified token, through the HSM's key operation and AES-GCM.
    private func open(_ token: PaymentToken, _ verified: VerifiedToken) async throws(PaymentTokenError) -> DecryptedPaymentToken {
        let plaintext = try await open(token, with: verified.key)
        return try DecryptedPaymentToken(
            paymentData: plaintext, version: token.version, transactionID: token.transactionIDHex,
            publicKeyHash: token.publicKeyHashBase64, signingTime: verified.signingTime, keyID: verified.key.keyID,
            merchantIdentifierHash: Hex.encode(verified.key.merchantIdentifierHash)
        )
    }

    private func open(_ token: PaymentToken, with key: MerchantKeyReference) async throws(PaymentTokenError) -> [UInt8] {
        let symmetricKey: SymmetricKey
        switch token.version {
        case .ecV1:
            let ephemeral: EphemeralPublicKey
            do {
                // Checks the algorithm, the curve (P-256) and that the point is on it.
                ephemeral = try EphemeralPublicKey(derRepresentation: token.header.ephemeralPublicKey ?? [])
            } catch {
                throw PaymentTokenError(
                    .decryptionFailed, "header.ephemeralPublicKey is not a valid P-256 public key (wrong curve, or a point not on it)")
            }
            symmetricKey = try await keyOperation {
                try await operations.deriveKey(
                    ephemeralPublicKey: ephemeral, otherInfo: AppleKDF.otherInfo(merchantIdentifierHash: key.merchantIdentifierHash),
                    key: key)
            }
            guard symmetricKey.bitCount == 256 else { throw PaymentTokenError(.decryptionFailed, "the derived key is not 256 bits") }
        case .rsaV1:
            symmetricKey = try await keyOperation { try await operations.unwrapKey(token.header.wrappedKey ?? [], key: key) }
            guard symmetricKey.bitCount == 128 else {
                throw PaymentTokenError(
                    .decryptionFailed, "the unwrapped key is \(symmetricKey.bitCount / 8) bytes; RSA_v1 wraps a 16-byte AES key")
            }
        }
        do {
            // AES-GCM with a 16-byte zero IV, no AAD, the tag last.
            let box = try AES.GCM.SealedBox(nonce: Self.zeroNonce, ciphertext: token.data.dropLast(16), tag: token.data.suffix(16))
            return Array(try AES.GCM.open(box, using: symmetricKey))
        } catch {
            throw PaymentTokenError(
                .decryptionFailed,
                "the data does not decrypt with the key (GCM tag mismatch): the token was encrypted to another key or altered in transit")
        }
    }

    private func keyOperation(_ body: () async throws -> SymmetricKey) async throws(PaymentTokenError) -> SymmetricKey {
        do {
            return try await body()
        } catch let error as PaymentTokenError {
            throw error
        } catch {
            throw PaymentTokenError(.hsmUnavailable, "the key operation failed: \(error)")
        }
    }

    private static let zeroNonce = try! AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 16))
}
