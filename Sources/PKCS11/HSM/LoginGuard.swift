import Crypto
import Foundation
import Synchronization

/// Decides when the HSM may try to re-establish itself (re-initialise and log in again).
///
/// HSMs that count failed logins lock the user PIN after a few, so a PIN the token refused is
/// never presented again: the next attempt waits until the configured PIN changes (an operator
/// fixed the file). Every other failure is retried after a pause that doubles each time, from
/// ``initialPause`` up to ``maximumPause``, so a lost HSM is not hammered four times a second.
public final class LoginGuard: Sendable {
    /// Why the guard holds attempts back, for readiness and the log.
    public enum Hold: Sendable, Equatable {
        /// The token refused this PIN (or has locked it); waiting for another one.
        case pinRefused
        /// The last attempt failed; the next one waits until the pause is over.
        case pausing(until: ContinuousClock.Instant)
    }

    static let initialPause = Duration.milliseconds(250)
    static let maximumPause = Duration.seconds(30)

    private struct State {
        var failures = 0
        var notBefore: ContinuousClock.Instant?
        var lastError: PKCS11Error?
        /// A salted digest of the refused PIN: enough to recognise it, never the PIN itself.
        var refusedPIN: [UInt8]?
    }

    private let state = Mutex(State())
    /// Per process, so the digest of a refused PIN means nothing outside it.
    private let salt = SymmetricKey(size: .bits256)
    private let clock = ContinuousClock()

    /// The last failure, while attempts are being held back or have not yet succeeded again.
    var lastError: PKCS11Error? { state.withLock { $0.lastError } }

    /// Consecutive failed attempts since the last success.
    var consecutiveFailures: Int { state.withLock { $0.failures } }

    /// Throws the reason no attempt may be made now; returns when one may.
    func admitAttempt() throws(PKCS11Error) {
        let refusal: PKCS11Error? = state.withLock { state in
            guard let notBefore = state.notBefore, clock.now < notBefore else { return nil }
            let wait = (notBefore - clock.now).components
            let milliseconds = wait.seconds * 1000 + wait.attoseconds / 1_000_000_000_000_000
            let cause = state.lastError.map { String(describing: $0) } ?? "an earlier failure"
            return PKCS11Error(
                code: state.lastError?.code ?? .moduleInvalid, category: .retry,
                message: "the HSM is not being re-established for another \(milliseconds) ms after \(cause)")
        }
        if let refusal { throw refusal }
    }

    /// Throws when `pin` is the one the token last refused; presenting it again could lock it.
    func admitLogin(pin: [UInt8]) throws(PKCS11Error) {
        let digest = fingerprint(pin)
        let refused = state.withLock { $0.refusedPIN == digest }
        guard refused else { return }
        throw PKCS11Error(
            code: .returnValue(.pinIncorrect), category: .misconfiguration, function: "C_Login",
            message: "the token refused this PIN before; it is not presented again (HSMs that count failures lock the PIN). "
                + "Correct the PIN at its source: the next attempt reads it again and uses the new one")
    }

    /// Records a failed attempt and when the next may be made.
    func failed(_ error: PKCS11Error, pin: [UInt8]?) {
        state.withLock { state in
            state.failures += 1
            state.lastError = error
            if let pin, Self.refusesPIN(error) { state.refusedPIN = fingerprint(pin) }
            let exponent = min(state.failures - 1, 16)
            let pause = min(Self.initialPause * (1 << exponent), Self.maximumPause)
            state.notBefore = clock.now + pause
        }
    }

    /// Records a successful login: the next failure starts the pauses from the beginning.
    func succeeded() {
        state.withLock { $0 = State() }
    }

    /// Why attempts are held back now, or nil: the pause after a failure first, then a refused
    /// PIN (an attempt is then allowed, and goes ahead only with another PIN).
    var hold: Hold? {
        state.withLock { state in
            if let notBefore = state.notBefore, clock.now < notBefore { return .pausing(until: notBefore) }
            return state.refusedPIN != nil && state.lastError.map(Self.refusesPIN) == true ? .pinRefused : nil
        }
    }

    /// Whether the last failure was the token refusing the configured PIN.
    var pinRefused: Bool {
        state.withLock { $0.refusedPIN != nil && $0.lastError.map(Self.refusesPIN) == true }
    }

    /// Errors that mean the PIN itself is wrong or locked: trying it again cannot help and may lock it.
    static func refusesPIN(_ error: PKCS11Error) -> Bool {
        switch error.returnValue {
        case .pinIncorrect, .pinLocked, .pinExpired, .pinInvalid, .pinLenRange: true
        default: false
        }
    }

    private func fingerprint(_ pin: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: pin, using: salt))
    }
}
