import Foundation
import Synchronization

extension HSM {
    /// Every private key in the token, read afresh (another instance may have changed them);
    /// the handle cache is replaced with what was found.
    public func keys() async throws(PKCS11Error) -> [KeyObject] {
        let listing = try await withSession { [self] session throws(PKCS11Error) in
            let listing = try session.privateKeys()
            state.withLock { $0.replacePrivateKeys(with: listing.keys) }  // inside the job: same generation
            return listing
        }
        try await keysListed(listing)
        return listing.keys.sorted { $0.id < $1.id }
    }

    /// To be told every listing of the token's keys, from any session. When a key listed before
    /// is gone (an administrator destroyed it) and sessions may hold copies of keys, the module
    /// is recycled, which ends every session and its copies.
    public func keysListed(_ listing: KeyListing) async throws(PKCS11Error) {
        // An unreadable key is still in the token: it has not gone.
        try await keysListed(Set(listing.keys.map(\.id) + listing.unreadable.compactMap(\.id)))
    }

    public func keysListed(_ ids: Set<KeyIdentifier>) async throws(PKCS11Error) {
        let gone = state.withLock { $0.listed(ids) }
        guard !gone.isEmpty else { return }
        logger.info("keys left the token; recycling to end their session copies", metadata: ["keys": "\(gone.map(\.hex).sorted())"])
        try await recycle()
    }

    /// The private key with `id`, from the cache when possible.
    public func key(_ id: KeyIdentifier) async throws(PKCS11Error) -> KeyObject {
        try await withSession { [self] session throws(PKCS11Error) in try cachedPrivateKey(id, session) }
    }

    /// The secret key with `id`, from the cache when possible.
    public func secretKey(_ id: KeyIdentifier) async throws(PKCS11Error) -> SecretKeyObject {
        try await withSession { [self] session throws(PKCS11Error) in try cachedSecretKey(id, session) }
    }

    /// Every secret key in the token, read afresh.
    public func secretKeys() async throws(PKCS11Error) -> [SecretKeyObject] {
        try await withSession { session throws(PKCS11Error) in try session.secretKeys() }.sorted { $0.id < $1.id }
    }

    /// The cached key, or the one found with `session` (then cached). Only called inside pool
    /// jobs, so the handle belongs to the current generation.
    private func cachedPrivateKey(_ id: KeyIdentifier, _ session: Session) throws(PKCS11Error) -> KeyObject {
        if let key = state.withLock({ $0.handles.privateKeys[id] }) { return key }
        guard let key = try session.privateKey(id: id) else { throw .keyNotFound(id) }
        remember(key)
        return key
    }

    private func cachedSecretKey(_ id: KeyIdentifier, _ session: Session) throws(PKCS11Error) -> SecretKeyObject {
        if let key = state.withLock({ $0.handles.secretKeys[id] }) { return key }
        guard let key = try session.secretKey(id: id) else { throw .keyNotFound(id) }
        remember(key)
        return key
    }

    /// Runs `body` with the private key `id`, its handle looked up inside the job.
    func withPrivateKey<R: Sendable>(
        _ id: KeyIdentifier, operation: String, path: String? = nil,
        _ body: @escaping @Sendable (Session, KeyObject) throws(PKCS11Error) -> R
    ) async throws(PKCS11Error) -> R {
        try await withKey(id, operation: operation, path: path) { [self] session throws(PKCS11Error) in
            try body(session, cachedPrivateKey(id, session))
        }
    }

    /// Runs `body` with the secret key `id`, its handle looked up inside the job.
    func withSecretKey<R: Sendable>(
        _ id: KeyIdentifier, operation: String, _ body: @escaping @Sendable (Session, SecretKeyObject) throws(PKCS11Error) -> R
    ) async throws(PKCS11Error) -> R {
        try await withKey(id, operation: operation) { [self] session throws(PKCS11Error) in try body(session, cachedSecretKey(id, session))
        }
    }

    /// Runs a job that uses the key `id`, reported to the configuration's operation observer
    /// (metrics and traces) as `operation` on `path`. A stale handle is re-found once; a lost login is
    /// re-established once (by one recycle, however many requests saw it).
    private func withKey<R: Sendable>(
        _ id: KeyIdentifier, operation: String, path: String? = nil, _ job: @escaping @Sendable (Session) throws(PKCS11Error) -> R
    ) async throws(PKCS11Error) -> R {
        guard let observer = configuration.operationObserver else { return try await withKey(id, queueWait: nil, job) }
        let startedAt = Date()
        let start = ContinuousClock.now
        let queueWait = QueueWaitRecorder()
        var failed = true
        defer {
            observer(
                HSMOperationRecord(
                    operation: operation, path: path,
                    startNanosecondsSinceEpoch: UInt64(max(0, startedAt.timeIntervalSince1970) * 1_000_000_000),
                    queueWait: queueWait.value, duration: ContinuousClock.now - start, failed: failed))
        }
        let result = try await withKey(id, queueWait: queueWait, job)
        failed = false
        return result
    }

    private func withKey<R: Sendable>(
        _ id: KeyIdentifier, queueWait: QueueWaitRecorder?, _ job: @escaping @Sendable (Session) throws(PKCS11Error) -> R
    ) async throws(PKCS11Error) -> R {
        var retried = false
        while true {
            let observed = currentGeneration
            do {
                try await reestablishIfLoggedOut(observed)
                return try await pool.run(deadline: configuration.operationTimeout, queueWait: queueWait, job)
            } catch {
                guard !retried else { throw error }
                retried = true
                if error.returnValue == .keyHandleInvalid || error.returnValue == .objectHandleInvalid {
                    forget(id)
                } else if error.category == .relogin {
                    try await recycle(ifStillAt: observed)
                } else {
                    throw error
                }
            }
        }
    }

    func remember(_ key: some RememberedKey) {
        state.withLock { key.remember(in: &$0) }
    }

    /// The key `make` makes in a session, its handle remembered inside the job (the handle's
    /// generation). A lost login is not retried: the key may exist by then.
    func makeKey<Key: RememberedKey>(_ make: @escaping @Sendable (Session) throws(PKCS11Error) -> Key) async throws(PKCS11Error) -> Key {
        try await creatingTokenObjects(retryingAfterLostLogin: false) { [self] session throws(PKCS11Error) in
            let key = try make(session)
            remember(key)
            return key
        }
    }

    func forget(_ id: KeyIdentifier) {
        state.withLock { $0.forget(id) }
    }
}

/// A key object whose handle the HSM keeps for the generation it was found or made in.
protocol RememberedKey: Sendable {
    func remember(in state: inout HSMState)
}

extension KeyObject: RememberedKey {
    func remember(in state: inout HSMState) { state.remember(self) }
}

extension SecretKeyObject: RememberedKey {
    func remember(in state: inout HSMState) { state.remember(self) }
}
