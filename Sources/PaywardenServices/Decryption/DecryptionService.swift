import ApplePay
import Foundation
import KeyCustody
import Logging
import PKCS11
import Synchronization
import Tracing

/// The decrypt endpoint's engine room: admission control (a bounded number of decryptions in
/// flight; beyond it a fast `overloaded`), the decryption itself on one thread (see `decrypt`),
/// outcome metrics, and the count that triggers module recycling.
public final class DecryptionService: Sendable {
    let hsm: HSM
    let keys: HSMPaymentKeys
    let store: MerchantKeyStore
    let decrypter: PaymentTokenDecrypter
    let database: DatabaseHealthService
    let metrics: ServerMetrics
    let maxInFlight: Int
    let recycleEvery: Int
    /// Yields the decryption count each time another `recycleEvery` decryptions are done.
    let recycleRequests: AsyncStream<Int>
    private let recycleContinuation: AsyncStream<Int>.Continuation
    /// Yields each time the HSM failed a verified token (it may be gone, logged out or stuck),
    /// so that readiness follows at once rather than at the next health check.
    let hsmFaults: AsyncStream<HSMFault>
    private let hsmFaultContinuation: AsyncStream<HSMFault>.Continuation
    private let replayCache: LedgerReplayCache
    private let inFlight = Atomic<Int>(0)
    private let decryptions = Atomic<Int>(0)
    /// Read only: the maintenance service decides whether the HSM can be used.
    let readiness: HSMReadiness

    public init(
        hsm: HSM, store: MerchantKeyStore, verification: TokenSignatureVerifier, maxInFlight: Int?, recycleEvery: Int,
        metrics: ServerMetrics, database: DatabaseHealthService, readiness: HSMReadiness, logger: Logger
    ) {
        self.hsm = hsm
        self.readiness = readiness
        self.keys = HSMPaymentKeys(hsm: hsm)
        self.store = store
        self.metrics = metrics
        self.maxInFlight = maxInFlight ?? hsm.workerCount * 64
        self.recycleEvery = recycleEvery
        (recycleRequests, recycleContinuation) = AsyncStream.makeStream(of: Int.self)
        (hsmFaults, hsmFaultContinuation) = AsyncStream.makeStream(of: HSMFault.self, bufferingPolicy: .bufferingNewest(1))
        self.database = database
        self.replayCache = LedgerReplayCache(ledger: database.database, health: database, logger: logger)
        self.decrypter = PaymentTokenDecrypter(
            verifier: verification,
            directory: keys, operations: keys, replayCache: replayCache
        )
    }

    /// Verifies and decrypts `body`. The work runs on one thread (``HSM/runOnWorkers(_:)``): the
    /// caller's with inline dispatch, an HSM worker with the pool, so verification and the key
    /// operation never wait for a hop between threads.
    /// - Parameter merchantIdentifierHashes: the merchants whose keys may open it (the vault's
    ///   organisation check); nil for the decrypt endpoint, where any configured key may.
    public func decrypt(_ body: [UInt8], merchantIdentifierHashes: Set<String>? = nil) async throws(PaymentTokenError)
        -> DecryptedPaymentToken
    {
        let decrypter = self.decrypter
        return try await decryption { attempt async throws(PaymentTokenError) in
            try await decrypter.decrypt(json: body, merchantIdentifierHashes: merchantIdentifierHashes, attempt: attempt)
        }
    }

    /// Verifies and decrypts `body` and hands it to `store`, which claims the token's transaction id
    /// in the same write that keeps what it made of it (``PaymentTokenDecrypter``'s
    /// `decrypt(json:at:merchantIdentifierHashes:attempt:storingWithClaim:)`), on the same thread.
    public func decrypt<Stored: Sendable>(
        _ body: [UInt8], merchantIdentifierHashes: Set<String>?,
        storingWithClaim store: @escaping @Sendable (DecryptedPaymentToken, TransactionClaim) async -> ClaimedStore<Stored>
    ) async throws(PaymentTokenError) -> Stored {
        let decrypter = self.decrypter
        return try await decryption { attempt async throws(PaymentTokenError) in
            try await decrypter.decrypt(
                json: body, merchantIdentifierHashes: merchantIdentifierHashes, attempt: attempt, storingWithClaim: store)
        }
    }

    /// A decryption admitted, traced, dispatched to the HSM's thread and counted by outcome.
    private func decryption<R: Sendable>(
        _ work: @escaping @Sendable (DecryptionAttempt) async throws(PaymentTokenError) -> R
    ) async throws(PaymentTokenError) -> R {
        try admit()
        let admitted = inFlight.add(1, ordering: .relaxed).newValue
        defer { metrics.setInFlight(inFlight.subtract(1, ordering: .relaxed).newValue) }
        guard admitted <= maxInFlight else {
            metrics.decrypt(outcome: .refused(.overloaded), duration: .zero)
            throw PaymentTokenError(.overloaded, "\(maxInFlight) decryptions are in progress; retry shortly")
        }
        let (startedAt, start) = (DefaultTracerClock.now, ContinuousClock.now)
        let result = await dispatched(DecryptionAttempt(), work)
        record(result, startedAt: startedAt, elapsed: ContinuousClock.now - start)
        return try result.get()
    }

    /// A decryption's outcome: counted and timed, an event of the request's span (as are the replay
    /// claim's and the HSM's inside it, ``RequestSpanEvents``; attributes name the outcome only,
    /// never anything from the token), and what follows from it: a module recycling when due, a
    /// readiness check when the HSM failed.
    private func record<R>(_ result: Result<R, PaymentTokenError>, startedAt: DefaultTracerClock.Timestamp, elapsed: Duration) {
        let outcome: OperationOutcome<PaymentTokenError.Code>
        switch result {
        case .success:
            outcome = .ok
            let count = decryptions.add(1, ordering: .relaxed).newValue
            if recycleEvery > 0, count % recycleEvery == 0 { recycleContinuation.yield(count) }
        case .failure(let error):
            outcome = .refused(error.code)
            // Stamped when the failure was seen: a health check that began later and passed
            // outdates it, one that began during the request does not.
            if error.code == .hsmUnavailable { hsmFaultContinuation.yield(HSMFault(reason: error.message, at: .now)) }
        }
        metrics.decrypt(outcome: outcome, duration: elapsed)
        RequestSpanEvents.record(
            "paywarden.decrypt", at: startedAt,
            ["paywarden.decrypt.outcome": .string(outcome.label), "paywarden.duration_us": .int64(Int64(elapsed / .microseconds(1)))])
        RequestSpanEvents.setAttribute("paywarden.decrypt.outcome", outcome.label)
    }

    /// Refuses at once what cannot be decrypted now: the HSM being re-established, the database down.
    private func admit() throws(PaymentTokenError) {
        guard readiness.admitsDecryptions else {
            throw PaymentTokenError(.hsmUnavailable, "the HSM is unavailable; Paywarden is re-establishing the session, retry shortly")
        }
        // Without the replay ledger no token is decrypted; say so at once rather than after a timeout.
        guard database.isAvailable else {
            metrics.decrypt(outcome: .refused(.databaseUnavailable), duration: .zero)
            throw PaymentTokenError(
                .databaseUnavailable, "the database is unavailable, so no token can be checked for replay; retry shortly")
        }
    }

    /// `work` on the HSM's thread. Overloaded, or the HSM did not answer in time: the decryption
    /// left running is abandoned, and the transaction id it claimed is given back for the retry.
    private func dispatched<R: Sendable>(
        _ attempt: DecryptionAttempt, _ work: @escaping @Sendable (DecryptionAttempt) async throws(PaymentTokenError) -> R
    ) async -> Result<R, PaymentTokenError> {
        do throws(PKCS11Error) {
            // The work's own refusal travels back as a value: the dispatch throws the HSM's errors only.
            return try await hsm.runOnWorkers { () async -> Result<R, PaymentTokenError> in
                do throws(PaymentTokenError) {
                    return .success(try await work(attempt))
                } catch {
                    return .failure(error)
                }
            }
        } catch {
            if let claimed = attempt.abandon() { await replayCache.release(claimed) }
            let code: PaymentTokenError.Code = error.code == .overloaded ? .overloaded : .hsmUnavailable
            return .failure(PaymentTokenError(code, "\(error.message); retry shortly"))
        }
    }
}
