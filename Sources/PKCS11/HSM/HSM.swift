import Crypto
import Foundation
import Logging
import Synchronization

/// A logged-in token and the sessions that work on it: the PKCS#11 layer's front door.
///
/// Opening an HSM loads the module with OS locking, finds the token by label, logs in on an
/// anchor session that stays open for the life of the process (closing the last session would
/// log the token out), probes which ECDH and RSA paths the token supports, caches the private
/// key handles, and starts one worker thread and session per configured worker.
public final class HSM: Sendable {
    public let configuration: HSMConfiguration
    public let module: PKCS11Module
    public let token: TokenInfo
    public let capabilities: Capabilities
    /// Whether decryption uses session copies of the token keys (``HSMConfiguration/sessionKeyCopies``).
    public let usesSessionKeyCopies: Bool
    /// Where calls run, as chosen at open (``HSMConfiguration/dispatch``); see ``dispatch`` for now.
    public let dispatchChoice: HSMDispatchChoice

    let pool: SessionPool
    private let location: TokenLocation
    /// The login, its anchor session, the key handles and their generation: one lock, so what
    /// changes together is changed in one transition (see ``HSMState``).
    let state: Mutex<HSMState>
    /// Paces re-establishment after failures, and never presents a refused PIN twice.
    let loginGuard = LoginGuard()
    let logger: Logger

    private init(configuration: HSMConfiguration, opened: Opened, logger: Logger) {
        self.configuration = configuration
        self.module = opened.location.module
        self.location = opened.location
        self.token = opened.token
        self.capabilities = opened.capabilities
        switch configuration.sessionKeyCopies {
        case .on: usesSessionKeyCopies = true
        case .off: usesSessionKeyCopies = false
        case .auto: usesSessionKeyCopies = opened.token.manufacturer.hasPrefix("SoftHSM")
        }
        self.state = Mutex(HSMState(anchor: opened.anchor, keys: opened.keys))
        self.logger = logger
        let location = opened.location
        self.dispatchChoice = opened.dispatch
        let deadline = configuration.operationTimeout
        let dispatchObserver = configuration.dispatchObserver
        self.pool = SessionPool(
            workers: configuration.workers, maxPending: configuration.maxPendingOperations, inline: opened.dispatch.chosen == .inline,
            inlineDeadline: deadline, tokenObjectLock: location.module.tokenObjectLock,
            onInlineOverrun: { elapsed in
                logger.error(
                    "an inline HSM call overran its deadline; HSM calls now run on the worker threads until restart",
                    metadata: ["running_for": "\(elapsed)", "deadline": "\(deadline.map { "\($0)" } ?? "none")"])
                dispatchObserver?(.pool)
            }
        ) { () throws(PKCS11Error) in
            try Session(module: location.module, slot: location.slot)
        }
    }

    /// Where calls run now: the choice made at open, or ``HSMDispatch/pool`` once an inline call
    /// overran its deadline (see ``SessionPool``).
    public var dispatch: HSMDispatch { pool.runsInline ? .inline : .pool }

    /// Opens the token described by `configuration`. Fails with a misconfiguration error that
    /// names what to fix when the module, token or PIN is wrong.
    ///
    /// - Parameter probeCapabilities: find the ECDH and RSA paths (needs two throw-away key pairs,
    ///   one of them RSA-2048). Administration that never decrypts can skip it; the paths are
    ///   then nil.
    public static func open(
        _ configuration: HSMConfiguration, probeCapabilities: Bool = true, logger: Logger = Logger(label: "pkcs11")
    ) async throws(PKCS11Error) -> HSM {
        let opened: Opened
        do {
            opened = try await DedicatedThread.run(name: "pkcs11-open") { () throws(PKCS11Error) -> Opened in
                let pin = try configuration.pin.read()
                let module = try PKCS11Module.load(path: configuration.modulePath)
                try module.initialize(reserved: configuration.initReserved)
                var anchor: Session?
                do throws(PKCS11Error) {
                    let location = TokenLocation(module: module, slot: try module.slot(forTokenLabel: configuration.tokenLabel))
                    let session = try location.logIn(pin: pin)
                    anchor = session
                    let mechanisms = try module.mechanisms(slot: location.slot)
                    let capabilities =
                        probeCapabilities
                        ? CapabilityProbe.run(session: session, mechanisms: mechanisms, configuration: configuration)
                        : Capabilities.unprobed(mechanisms)
                    return Opened(
                        location: location, token: try module.tokenInfo(slot: location.slot),
                        anchor: SessionTransfer(session: session), capabilities: capabilities, keys: try session.privateKeys().keys,
                        dispatch: HSMDispatchChoice(configuration: configuration, session: session)
                    )
                } catch {
                    // Leave the module as we found it: nothing open, one user fewer.
                    anchor?.close()
                    module.finalize()
                    throw error
                }
            }
        } catch let error as PKCS11Error {
            throw error
        } catch {
            throw PKCS11Error(code: .moduleInvalid, category: .misconfiguration, message: "\(error)")
        }
        let hsm = HSM(configuration: configuration, opened: opened, logger: logger)
        logger.info(
            "HSM ready",
            metadata: [
                "module": "\(configuration.modulePath)", "token": "\(hsm.token.label)",
                "ecdh_path": "\(hsm.capabilities.ecdhPath?.rawValue ?? "none")",
                "rsa_path": "\(hsm.capabilities.rsaDecryptionPath?.rawValue ?? "none")",
                "keys": "\(opened.keys.count)", "workers": "\(hsm.pool.workerCount)",
                "session_key_copies": "\(hsm.usesSessionKeyCopies)", "dispatch": "\(hsm.dispatchChoice.summary)",
            ])
        for line in hsm.capabilities.report { logger.debug("capability probe", metadata: ["result": "\(line)"]) }
        return hsm
    }

    /// Finishes queued work, closes every session and finalizes the module.
    public func close() async {
        guard case .close(let anchor) = state.withLock({ $0.close() }) else { return }
        _ = try? await DedicatedThread.run(name: "pkcs11-close") { [self] in
            pool.shutdown()
            anchor?.session.close()  // after the queued work, which may need the login it holds
            module.finalize()
        }
    }

    /// How many times the module has been recycled.
    public var recycles: Int { state.withLock { $0.recycles } }

    /// Operations waiting for a worker.
    public var pendingOperations: Int { pool.pending }

    /// The worker threads as a task executor. Work that mostly waits on the HSM runs best here
    /// (`withTaskExecutorPreference(hsm.executor)`): its HSM calls then run inline on the
    /// worker's own session, without a thread hop each way.
    public var executor: any TaskExecutor { pool }

    /// The number of worker threads, each with its own session.
    public var workerCount: Int { pool.workerCount }

    /// Runs `body` with a pooled session on a worker thread. Handles are the caller's business;
    /// prefer the typed operations, which re-find keys and re-login when they must.
    ///
    /// - Parameter retryingAfterLostLogin: after a lost login, re-establish it and run `body`
    ///   again. Pass false when `body` creates objects: what it made before the loss may persist.
    ///   A body that makes token objects goes through ``creatingTokenObjects(retryingAfterLostLogin:_:)``.
    public func withSession<R: Sendable>(
        retryingAfterLostLogin: Bool = true, _ body: @escaping @Sendable (Session) throws(PKCS11Error) -> R
    ) async throws(PKCS11Error) -> R {
        try await withSession(retryingAfterLostLogin: retryingAfterLostLogin, createsTokenObjects: false, body)
    }

    private func withSession<R: Sendable>(
        retryingAfterLostLogin: Bool, createsTokenObjects: Bool, _ body: @escaping @Sendable (Session) throws(PKCS11Error) -> R
    ) async throws(PKCS11Error) -> R {
        let observed = currentGeneration
        try await reestablishIfLoggedOut(observed)
        do {
            return try await pool.run(deadline: configuration.operationTimeout, createsTokenObjects: createsTokenObjects, body)
        } catch  where error.category == .relogin && retryingAfterLostLogin {
            try await recycle(ifStillAt: observed)
            return try await pool.run(deadline: configuration.operationTimeout, createsTokenObjects: createsTokenObjects, body)
        }
    }

    /// ``withSession(retryingAfterLostLogin:_:)`` for a `body` that makes token objects or changes
    /// their attributes: it runs alone (``TokenObjectLock``).
    public func creatingTokenObjects<R: Sendable>(
        retryingAfterLostLogin: Bool = true, _ body: @escaping @Sendable (Session) throws(PKCS11Error) -> R
    ) async throws(PKCS11Error) -> R {
        try await withSession(retryingAfterLostLogin: retryingAfterLostLogin, createsTokenObjects: true, body)
    }

    /// Whether the HSM is logged in (a failed re-establishment leaves it logged out).
    public var isLoggedIn: Bool { state.withLock { $0.isLoggedIn } }

    /// Why re-establishing the HSM is held back now, if it is (see ``LoginGuard``).
    public var loginGuardHold: LoginGuard.Hold? { loginGuard.hold }

    /// Whether the token refused the configured PIN, so no login is attempted until it changes.
    public var pinRefused: Bool { loginGuard.pinRefused }

    /// Re-establishes the HSM before an operation when the last recycle left it logged out.
    func reestablishIfLoggedOut(_ observed: Int) async throws(PKCS11Error) {
        guard state.withLock({ $0.needsReestablishment }) else { return }
        try await recycle(ifStillAt: observed)
    }

    /// The generation of the key handles now, for ``recycle(ifStillAt:)``.
    var currentGeneration: Int { state.withLock { $0.generation } }

    /// Runs `body` as a task on the worker threads, where its HSM calls run inline on the
    /// worker's session (no thread hop per call), admitted against ``HSMConfiguration/maxPendingOperations``.
    /// When it has not finished within ``HSMConfiguration/operationTimeout`` (an HSM call that
    /// stopped answering holds its worker), the caller gets a `timedOut` error and `body` is left
    /// to finish on its own; whatever it returns then is discarded.
    ///
    /// With inline dispatch, `body` runs where it is, its HSM calls on the caller's thread, each
    /// held to the deadline by the pool's watchdog (``SessionPool``).
    public func runOnWorkers<R: Sendable>(_ body: @escaping @Sendable () async -> R) async throws(PKCS11Error) -> R {
        let pool = self.pool
        let deadline = configuration.operationTimeout
        // Not counted against the queue's bound: it would then count against itself when its
        // calls take the queue (while maintenance holds the pool). The caller bounds these
        // (DecryptionService's PAYWARDEN_MAX_IN_FLIGHT).
        if pool.runsInline { return await body() }
        do {
            return try await pool.admitted { () async throws -> R in
                guard let deadline else { return await withTaskExecutorPreference(pool) { await body() } }
                let pending = PendingRun<R>()
                return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<R, any Error>) in
                    pending.continuation = continuation
                    Task(executorPreference: pool) { pending.finish(.success(await body())) }
                    pending.expire(after: deadline)
                }
            }
        } catch let error as PKCS11Error {
            throw error
        } catch {
            throw PKCS11Error(code: .poolStopped, category: .retry, message: "unexpected error \(error)")
        }
    }

    /// Re-initialises the module without failing in-flight work: waits for the workers to finish
    /// what they hold, calls `C_Finalize` and `C_Initialize`, logs in again and re-caches every
    /// key handle, while new work waits in the queue. Reclaims what SoftHSM 2.6.1 leaks per derive.
    /// (When another HSM in this process shares the module, it is not re-initialised: the login
    /// is renewed and the workers' sessions are closed instead.)
    @discardableResult
    public func recycle() async throws(PKCS11Error) -> Duration {
        try await recycle(ifStillAt: nil) ?? .zero
    }

    /// Recycles unless another recycle already happened since generation `observed`: requests
    /// that fail together on a lost login trigger one recycle, not one each.
    @discardableResult
    func recycle(ifStillAt observed: Int?) async throws(PKCS11Error) -> Duration? {
        let clock = ContinuousClock()
        let start = clock.now
        // After a failure, attempts are paced, and a refused PIN is never presented again.
        try loginGuard.admitAttempt()
        let pin: [UInt8]
        do throws(PKCS11Error) {
            pin = try configuration.pin.read()
        } catch {
            // The module is untouched: a working login stays in use.
            loginGuard.failed(error, pin: nil)
            logger.error("HSM not re-established", metadata: ["error": "\(error)"])
            throw error
        }
        // Not a failure of its own: checking for a new PIN touches no HSM, so it needs no pause,
        // and the operator's fix is picked up at the next check.
        try loginGuard.admitLogin(pin: pin)
        do {
            let done = try await pool.exclusive { [self] () throws(PKCS11Error) -> Bool in
                if let observed, currentGeneration != observed { return false }
                // Admitted before an attempt queued ahead of this one failed: that failure's pause
                // holds here too, or every request waiting on a lost HSM would make an attempt of its own.
                try loginGuard.admitAttempt()
                let reestablished: Reestablished
                do throws(PKCS11Error) {
                    reestablished = try reestablish(pin: pin)
                } catch {
                    // Recorded while still exclusive, so the attempt queued next sees the new
                    // generation and the pause.
                    state.withLock { $0.reestablishmentFailed() }
                    loginGuard.failed(error, pin: pin)
                    logger.error(
                        "HSM module recycle failed",
                        metadata: ["error": "\(error)", "consecutive_failures": "\(loginGuard.consecutiveFailures)"])
                    throw error
                }
                // Still exclusive: no job can see a handle of the old generation from here on.
                // What the module leaked is free now and serves the next allocations. It is not
                // handed back (malloc_trim): that lengthened each recycle from about 8 to 14 ms,
                // and the pages faulted back in afterwards, raising p99 at half load from about
                // 7 to 13 ms, for about 1 MB less RSS.
                state.withLock {
                    $0.reestablished(anchor: reestablished.anchor, keys: reestablished.keys, restarted: reestablished.restarted)
                }
                // Recorded while still exclusive, as a failure is: an attempt queued next that
                // fails must not have its pause, or its refused PIN, erased by this success.
                loginGuard.succeeded()
                return true
            }
            guard done else { return nil }
        } catch let error as PKCS11Error {
            throw error
        } catch {
            throw PKCS11Error(code: .moduleInvalid, category: .retry, message: "\(error)")
        }
        let elapsed = clock.now - start
        logger.info("HSM module recycled", metadata: ["duration": "\(elapsed)", "recycles": "\(recycles)"])
        return elapsed
    }

    /// Re-initialises the module (or renews the login when another HSM shares it), logs in on a
    /// new anchor session and lists the private keys. Runs while the pool is exclusive; the
    /// state is told the outcome by the caller.
    private func reestablish(pin: [UInt8]) throws(PKCS11Error) -> Reestablished {
        let old = try state.withLock { (state) throws(PKCS11Error) -> SessionTransfer? in try state.beginReestablishment() }?.session
        // When another HSM in this process shares the module, it is not restarted:
        // the login is renewed and the old sessions are closed instead.
        let restarted: Bool
        do throws(PKCS11Error) {
            restarted = try module.reinitialize()
        } catch {
            pool.endWorkerSessions(moduleRestarted: true)  // the module's state is unknown: forget them
            old?.abandon()
            throw error
        }
        pool.endWorkerSessions(moduleRestarted: restarted)
        defer { if !restarted { old?.close() } }  // after the new login: the token stays logged in
        if restarted { old?.abandon() }
        location.slot = try module.slot(forTokenLabel: configuration.tokenLabel)
        let fresh = try location.logIn(pin: pin)
        return Reestablished(anchor: SessionTransfer(session: fresh), keys: try fresh.privateKeys().keys, restarted: restarted)
    }

    /// Checks that the token is reachable and the login holds: the slot must still hold the
    /// token (SoftHSM, for one, answers searches with nothing once its store is gone), and a
    /// worker's session must see the user logged in. Throws a re-login error otherwise.
    public func checkHealth() async throws(PKCS11Error) {
        // A check that meets a recycle waits for it in the pool's queue, as every job does.
        guard !state.withLock({ $0.hasNoLogin }) else {
            throw PKCS11Error(code: .returnValue(.userNotLoggedIn), category: .relogin, message: "the HSM has no logged-in session")
        }
        let location = self.location
        let label = configuration.tokenLabel
        // A call that will not return holds its thread, whatever the dispatch: not healthy.
        if let overdue = pool.overdueInlineCall {
            throw PKCS11Error(
                code: .timedOut, category: .retry, message: "an HSM call has been running for \(overdue), past its deadline")
        }
        // On a worker even with inline dispatch, so that a module that stopped answering fails the check at its deadline.
        let loggedIn = try await pool.run(deadline: configuration.healthCheckTimeout, inlineAllowed: false) {
            session throws(PKCS11Error) -> Bool in
            let info = try location.module.tokenInfo(slot: location.slot)
            guard info.label == label else {
                throw PKCS11Error(code: .tokenNotFound, category: .relogin, message: "the slot no longer holds token \"\(label)\"")
            }
            return session.isLoggedIn
        }
        guard loggedIn else {
            throw PKCS11Error(code: .returnValue(.userNotLoggedIn), category: .relogin, message: "the HSM session is no longer logged in")
        }
    }
}

/// Where the token is now: its module and its slot, which may move across a recycle.
final class TokenLocation: Sendable {
    let module: PKCS11Module
    private let current: Mutex<SlotID>

    init(module: PKCS11Module, slot: SlotID) {
        self.module = module
        self.current = Mutex(slot)
    }

    var slot: SlotID {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    /// Opens a session and logs the user in on it; the login holds for every session after.
    func logIn(pin: [UInt8]) throws(PKCS11Error) -> Session {
        let session = try Session(module: module, slot: slot)
        try session.login(userPIN: pin)  // on failure the session closes as it goes
        return session
    }
}

/// What a successful re-establishment hands to the state.
private struct Reestablished {
    let anchor: SessionTransfer
    let keys: [KeyObject]
    let restarted: Bool
}

private struct Opened: Sendable {
    let location: TokenLocation
    let token: TokenInfo
    let anchor: SessionTransfer
    let capabilities: Capabilities
    let keys: [KeyObject]
    let dispatch: HSMDispatchChoice
}
