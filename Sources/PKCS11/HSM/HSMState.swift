/// What changes while an ``HSM`` runs, kept under the HSM's one lock.
///
/// The login, the anchor session, the key handles and the generation they belong to must change
/// together: a handle read in one generation is void in the next (tokens renumber objects after
/// `C_Initialize`), and an anchor exists exactly while the token is logged in. Each change is
/// one transition below, so no caller can make half of one.
struct HSMState {
    /// Where the login stands.
    enum Login {
        /// Logged in; the anchor session stays open for as long, since closing a token's last
        /// session logs it out.
        case loggedIn(anchor: SessionTransfer)
        /// A recycle is re-initialising the module and logging in again (the pool is exclusive).
        case reestablishing
        /// The last recycle failed: sessions opened now would see no private keys, so operations
        /// re-establish the HSM first (as the ``LoginGuard`` allows).
        case loggedOut
        /// Closed for good: nothing is re-established.
        case closed
    }

    /// What ``close()`` found.
    enum Closing {
        case alreadyClosed
        /// The anchor to close once queued work is done; nil when a recycle had taken it.
        case close(anchor: SessionTransfer?)
    }

    private(set) var login: Login
    /// Bumped by every recycle, successful or not, while no job runs; handles read in one
    /// generation are never used in another.
    private(set) var generation = 0
    /// Successful recycles.
    private(set) var recycles = 0
    /// Handles by key id, valid for ``generation``. Only read inside pool jobs, which never run
    /// during a recycle.
    private(set) var handles = KeyHandles()
    /// The ids of the token's keys at the last listing (or found since), to notice keys that go.
    private(set) var listedKeys: Set<KeyIdentifier>
    /// Set when a decryption used a session key copy; cleared by a recycle that restarted the
    /// module, which ends them all.
    private(set) var sessionKeyCopiesMayExist = false

    init(anchor: SessionTransfer, keys: [KeyObject]) {
        login = .loggedIn(anchor: anchor)
        handles.replacePrivateKeys(with: keys)
        listedKeys = Set(keys.map(\.id))
    }

    /// Whether the token is logged in on an anchor session.
    var isLoggedIn: Bool {
        if case .loggedIn = login { return true }
        return false
    }

    /// Whether no login is held or coming: the last recycle failed, or the HSM is closed. (While
    /// a recycle runs, work queued behind it sees its outcome.)
    var hasNoLogin: Bool {
        switch login {
        case .loggedOut, .closed: true
        case .loggedIn, .reestablishing: false
        }
    }

    /// Whether an operation must re-establish the HSM before it runs.
    var needsReestablishment: Bool {
        switch login {
        case .reestablishing, .loggedOut: true
        case .loggedIn, .closed: false
        }
    }

    // MARK: Recycling

    /// A recycle starts: the anchor is handed to it (to close or abandon), and the HSM counts
    /// as logged out until ``reestablished(anchor:keys:restarted:)``.
    mutating func beginReestablishment() throws(PKCS11Error) -> SessionTransfer? {
        switch login {
        case .loggedIn(let anchor):
            login = .reestablishing
            return anchor
        case .reestablishing, .loggedOut:
            login = .reestablishing
            return nil
        case .closed:
            throw PKCS11Error(code: .poolStopped, category: .retry, message: "the HSM is closed")
        }
    }

    /// A recycle logged in again on `anchor` and listed `keys`: a new generation with their
    /// handles. A module that restarted ended every session copy of a key.
    mutating func reestablished(anchor: SessionTransfer, keys: [KeyObject], restarted: Bool) {
        generation += 1
        handles.replaceAll(privateKeys: keys)
        if restarted { sessionKeyCopiesMayExist = false }
        recycles += 1
        switch login {
        case .reestablishing, .loggedIn, .loggedOut: login = .loggedIn(anchor: anchor)
        case .closed: break  // closed meanwhile: the anchor closes as it goes
        }
    }

    /// A recycle failed: the old handles are void whatever happened, and the HSM stays logged out.
    mutating func reestablishmentFailed() {
        generation += 1
        handles.replaceAll(privateKeys: [])
        switch login {
        case .reestablishing, .loggedIn, .loggedOut: login = .loggedOut
        case .closed: break
        }
    }

    /// The HSM closes: returns the anchor to close once queued work is done, the first time only.
    mutating func close() -> Closing {
        switch login {
        case .closed:
            return .alreadyClosed
        case .loggedIn(let anchor):
            login = .closed
            return .close(anchor: anchor)
        case .reestablishing, .loggedOut:
            login = .closed
            return .close(anchor: nil)
        }
    }

    // MARK: Keys

    /// A listing of the token's keys: returns the keys listed before and gone now when sessions
    /// may hold copies of them (a recycle then ends those copies), else nothing.
    mutating func listed(_ ids: Set<KeyIdentifier>) -> Set<KeyIdentifier> {
        let gone = listedKeys.subtracting(ids)
        listedKeys = ids
        return sessionKeyCopiesMayExist ? gone : []
    }

    /// A listing of the private keys, in this generation.
    mutating func replacePrivateKeys(with keys: [KeyObject]) {
        handles.replacePrivateKeys(with: keys)
    }

    /// A private key found or made in this generation.
    mutating func remember(_ key: KeyObject) {
        handles.remember(key)
        listedKeys.insert(key.id)
    }

    /// A secret key found or made in this generation.
    mutating func remember(_ key: SecretKeyObject) {
        handles.remember(key)
    }

    mutating func forget(_ id: KeyIdentifier) {
        handles.forget(id)
    }

    /// A decryption is about to use a session copy of a key.
    mutating func sessionKeyCopyUsed() {
        sessionKeyCopiesMayExist = true
    }
}

/// Carries a session across threads: the anchor from the opening thread to the HSM, which then
/// owns it, and out of the state to the recycle or close that ends it.
struct SessionTransfer: @unchecked Sendable {
    let session: Session
}
