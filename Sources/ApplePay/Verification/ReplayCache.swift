import Foundation
import Synchronization

/// Remembers the transaction ids of verified tokens for as long as they could pass the
/// signing-time window, so the same token is decrypted once. A shared database implements it
/// for several instances (the server's replay ledger).
public protocol ReplayCache: Sendable {
    /// Claims `transactionID`; not new when it was claimed before and has not expired. Throws when
    /// the claim cannot be recorded: the token is then not decrypted. The answer is final when
    /// this returns, but the claim may not yet survive a crash: ``confirm(_:)`` says when it does,
    /// and nothing leaves on its strength before then.
    func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async throws -> ReplayClaim
    /// Returns once `claim` survives a crash and a power loss; throws when it cannot be made to
    /// (what it guarded must then not be released).
    func confirm(_ claim: ReplayClaim) async throws
    /// Whether `transactionID` is claimed and unexpired at `now`, without claiming it: the look
    /// before the HSM when the claim is made with the write that keeps what the token became.
    func isClaimed(_ transactionID: [UInt8], now: Date) async throws -> Bool
    /// Gives a claim back, when the token could not be processed for reasons that were not its
    /// own (the HSM was unavailable), so the client can retry.
    func release(_ transactionID: [UInt8]) async
}

/// A claim of a transaction id, as the replay cache decided it (``ReplayCache/claim(_:until:now:)``).
public struct ReplayClaim: Sendable, Hashable {
    /// True when the id was claimed now; false for a replay.
    public let isNew: Bool
    /// The cache's own mark of where the claim stands in its durable order (a database's commit
    /// batch), for ``ReplayCache/confirm(_:)``; 0 when it is durable already.
    public let position: UInt64

    public init(isNew: Bool, position: UInt64 = 0) {
        self.isNew = isNew
        self.position = position
    }
}

/// A transaction id for the caller to claim in the same write that keeps what its token became
/// (``PaymentTokenDecrypter/decrypt(json:at:merchantIdentifierHashes:attempt:storingWithClaim:)``).
public struct TransactionClaim: Sendable, Hashable {
    public let transactionID: [UInt8]
    /// The token's signing time plus the signing-time window.
    public let expiry: Date
    /// The time the token was judged at.
    public let now: Date

    public init(transactionID: [UInt8], expiry: Date, now: Date) {
        self.transactionID = transactionID
        self.expiry = expiry
        self.now = now
    }
}

/// What a store made of a decrypted token and its ``TransactionClaim``
/// (``PaymentTokenDecrypter/decrypt(json:at:merchantIdentifierHashes:attempt:storingWithClaim:)``).
public enum ClaimedStore<Stored: Sendable>: Sendable {
    /// Kept, with the claim in the same write.
    case stored(Stored)
    /// The claim was refused: another attempt has the token.
    case replayed
    /// Nothing was written, the claim included (`Stored` tells the caller why): this attempt
    /// holds no claim, so it never gives one back.
    case notStored(Stored)
}

/// A ``ReplayCache`` in this process's memory.
///
/// A service decrypting thousands of tokens a second remembers millions of ids, so each is kept
/// as a 64-bit keyed fingerprint (SipHash with this process's random seed), 8 bytes in a hash
/// set instead of a 32-byte id with its expiry. A new id shares a fingerprint with a remembered
/// one with probability n / 2^64, about 5 × 10^-13 with ten million remembered; such a token
/// would be refused as a replay. The same id always has the same fingerprint, so a replay is
/// never taken for a new token.
///
/// Claims live in two generations. The older one is dropped, whole, once every claim in it has
/// expired and at least `generationLength` has passed, so expiry costs nothing per token (no
/// sweep over millions of entries under the lock) and needs no per-entry date. An id is thus
/// remembered at least until its expiry, and refused until its generation is dropped.
public final class InMemoryReplayCache: ReplayCache {
    private struct Generation {
        var fingerprints: Set<UInt64> = []
        /// The latest expiry of any claim in the generation.
        var latestExpiry = Date.distantPast

        mutating func insert(_ fingerprint: UInt64, until expiry: Date) {
            fingerprints.insert(fingerprint)
            latestExpiry = max(latestExpiry, expiry)
        }
    }

    private struct State {
        var current = Generation()
        var previous = Generation()
        var nextRotation = Date.distantPast

        mutating func rotateIfDue(now: Date, generationLength: TimeInterval) {
            guard now >= nextRotation, now >= previous.latestExpiry else { return }
            previous = current
            current = Generation()
            nextRotation = now.addingTimeInterval(generationLength)
        }

        func contains(_ fingerprint: UInt64) -> Bool {
            current.fingerprints.contains(fingerprint) || previous.fingerprints.contains(fingerprint)
        }
    }

    private let state = Mutex(State())
    /// The least time a generation collects claims before it may be rotated out.
    private let generationLength: TimeInterval

    public init(generationLength: TimeInterval = 600) {
        self.generationLength = generationLength
    }

    /// A cache for tokens checked against `signingTimeWindow`: a claim lasts at most twice the
    /// window (a signing time up to one window ahead), so that is how long a generation lasts.
    public convenience init(signingTimeWindow: TimeInterval) {
        self.init(generationLength: 2 * signingTimeWindow)
    }

    public func claim(_ transactionID: [UInt8], until expiry: Date, now: Date) async -> ReplayClaim {
        let fingerprint = Self.fingerprint(transactionID)
        return ReplayClaim(
            isNew: state.withLock { state in
                state.rotateIfDue(now: now, generationLength: generationLength)
                if state.contains(fingerprint) { return false }
                state.current.insert(fingerprint, until: expiry)
                return true
            })
    }

    /// A claim in memory is as durable as this process.
    public func confirm(_ claim: ReplayClaim) async {}

    public func isClaimed(_ transactionID: [UInt8], now: Date) async -> Bool {
        let fingerprint = Self.fingerprint(transactionID)
        return state.withLock { state in
            state.rotateIfDue(now: now, generationLength: generationLength)
            return state.contains(fingerprint)
        }
    }

    public func release(_ transactionID: [UInt8]) async {
        let fingerprint = Self.fingerprint(transactionID)
        state.withLock { state in
            state.current.fingerprints.remove(fingerprint)
            state.previous.fingerprints.remove(fingerprint)
        }
    }

    /// Transaction ids currently remembered (expired ones included until their generation ends).
    public var count: Int { statistics.count }

    /// The number of remembered ids and the bytes they occupy, read together.
    public var statistics: (count: Int, footprint: Int) {
        state.withLock { state in
            (
                state.current.fingerprints.count + state.previous.fingerprints.count,
                Self.footprint(of: state.current.fingerprints) + Self.footprint(of: state.previous.fingerprints)
            )
        }
    }

    /// Each generation's hash set: 8 bytes a bucket plus a bit.
    private static func footprint(of set: Set<UInt64>) -> Int {
        guard set.capacity > 0 else { return 0 }
        // A native set fills at most three quarters of its power-of-two bucket count.
        var buckets = 1
        while buckets * 3 / 4 < set.capacity { buckets <<= 1 }
        return buckets * MemoryLayout<UInt64>.stride + buckets / 8
    }

    private static func fingerprint(_ transactionID: [UInt8]) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(transactionID.count)
        transactionID.withUnsafeBytes { hasher.combine(bytes: $0) }
        return UInt64(UInt(bitPattern: hasher.finalize()))
    }
}
