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
        let now = at ?? clock()
        let verification = await verifier.verify(token, now: now)
        if let failure = verification.failure { throw failure }
        guard let signingTime = verification.signingTime else { throw .signature("the signing time is missing") }

        guard let key = directory.key(forPublicKeyHash: token.header.publicKeyHash) else {
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

        if let merchantIdentifierHashes, !merchantIdentifierHashes.contains(Hex.encode(key.merchantIdentifierHash)) {
            throw PaymentTokenError(
                .merchantNotAuthorized, "the token is encrypted to a key of a merchant identifier this paypage or organisation does not use"
            )
        }

        let expiry = signingTime.addingTimeInterval(verifier.signingTimeWindow)
        let claimed: Bool
        do {
            claimed = try await replayCache.claim(token.header.transactionID, until: expiry, now: now)
        } catch {
            // Never a decryption without the replay check.
            throw PaymentTokenError(
                .databaseUnavailable, "the replay ledger cannot be reached, so the token was not decrypted; retry shortly")
        }
        guard claimed else {
            throw PaymentTokenError(
                .replayedTransaction,
                "transaction \(token.transactionIDHex) was already decrypted within the last \(Int(verifier.signingTimeWindow)) s; a "
                    + "token is decrypted once"
            )
        }
        if let attempt, !attempt.recordClaim(token.header.transactionID) {
            await replayCache.release(token.header.transactionID)
            throw PaymentTokenError(.hsmUnavailable, "the HSM did not answer in time; retry shortly")
        }
        do {
            let plaintext = try await open(token, with: key)
            return try DecryptedPaymentToken(
                paymentData: plaintext, version: token.version, transactionID: token.transactionIDHex,
                publicKeyHash: token.publicKeyHashBase64, signingTime: signingTime, keyID: key.keyID,
                merchantIdentifierHash: Hex.encode(key.merchantIdentifierHash)
            )
        } catch {
            // An HSM failure after full verification is retryable: the id is given back (unless the
            // caller abandoned the attempt and gave it back already). A failed release leaves it
            // claimed until it expires: the token is then refused, never decrypted twice.
            if error.code == .hsmUnavailable || error.code == .overloaded, attempt?.takeClaimForRelease() ?? true {
                await replayCache.release(token.header.transactionID)
            }
            throw error
        }
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
