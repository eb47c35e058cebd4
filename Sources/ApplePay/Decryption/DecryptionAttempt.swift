import Synchronization

/// One decryption that its caller may give up on while it runs (an HSM call past its deadline),
/// and the transaction id it claimed, which then must not stay burned.
///
/// Exactly one side gives the claim back: the decrypter, when its own key operation fails, or the
/// caller that abandoned it, which never receives what the decrypter produces. A claim made after
/// the abandonment is given back by the decrypter at once.
public final class DecryptionAttempt: Sendable {
    private struct State {
        var claim: [UInt8]?
        var abandoned = false
    }

    private let state = Mutex(State())

    public init() {}

    /// The decrypter claimed `transactionID`. False when the attempt was already abandoned: the
    /// decrypter then gives the claim back itself and stops.
    func recordClaim(_ transactionID: [UInt8]) -> Bool {
        state.withLock { state in
            guard !state.abandoned else { return false }
            state.claim = transactionID
            return true
        }
    }

    /// Whether the decrypter may give its claim back (its key operation failed): not when the
    /// caller abandoned the attempt, which gave it back already.
    func takeClaimForRelease() -> Bool {
        state.withLock { state in
            guard !state.abandoned, state.claim != nil else { return false }
            state.claim = nil
            return true
        }
    }

    /// Whether the caller gave the attempt up.
    var isAbandoned: Bool {
        state.withLock { $0.abandoned }
    }

    /// Gives the attempt up. Returns the transaction id it holds, for the caller to give back,
    /// or nil when it claimed none (yet).
    public func abandon() -> [UInt8]? {
        state.withLock { state in
            state.abandoned = true
            defer { state.claim = nil }
            return state.claim
        }
    }
}
