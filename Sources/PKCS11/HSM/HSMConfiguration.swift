import Foundation

/// Which token to open and how to use it. Plain values: the caller decides where they come from.
/// The initialiser takes what has no sensible default (module, token, PIN); the tuning starts at
/// its defaults and is set by assignment.
public struct HSMConfiguration: Sendable {
    /// The vendor's PKCS#11 library.
    public var modulePath: String
    /// The string `C_Initialize` receives as `CK_C_INITIALIZE_ARGS.pReserved` (nil: NULL). NSS
    /// softokn reads its database directory and token label from it and refuses a NULL; SoftHSM
    /// refuses anything else. It names no secret.
    public var initReserved: String?
    /// The token, found by label because slot ids move.
    public var tokenLabel: String
    /// Where the user PIN is read from when the token is opened (and at every re-login).
    public var pin: PINSource
    /// Sessions and threads doing HSM work.
    public var workers = ProcessInfo.processInfo.activeProcessorCount
    /// Operations allowed to wait for a worker before new ones are refused as overloaded.
    public var maxPendingOperations = 256
    /// Permits the weakest ECDH path, where Z leaves the HSM.
    public var allowExtractableSharedSecret = false
    /// Permits raw RSA in the HSM with OAEP decoded by OpenSSL, for HSMs without OAEP-SHA256.
    public var allowSoftwareOAEPDecoding = false
    /// Whether decryption uses per-session copies of the token keys (see ``SessionKeyCopies``).
    public var sessionKeyCopies = SessionKeyCopies.auto
    /// How long a caller waits for an HSM operation, queued and running, before it is told the
    /// HSM is unavailable (nil: for ever). A network HSM that stops answering would otherwise
    /// hold every request; the call itself cannot be interrupted and finishes on its worker.
    public var operationTimeout: Duration? = .seconds(10)
    /// Told about each key operation once it is done (the server counts them, and traces them when
    /// tracing is on); nil: nothing is measured.
    public var operationObserver: (@Sendable (HSMOperationRecord) -> Void)?
    /// Told when calls move to another dispatch (inline turned off by a call past its deadline),
    /// as it happens (the server's gauge).
    public var dispatchObserver: (@Sendable (HSMDispatch) -> Void)?
    /// Told, with the operation's name, each time the module failed a key operation on outside
    /// bytes and then ran the same operation with the same key correctly on bytes of its own:
    /// the failure was the input's (the server counts them).
    public var inputFailureObserver: (@Sendable (String) -> Void)?
    /// How long the health check waits for the HSM before calling it unavailable.
    public var healthCheckTimeout: Duration = .seconds(2)
    /// Where HSM calls run: on the caller's thread, on the worker threads, or chosen by the
    /// module's measured round trip (``HSMDispatch``).
    public var dispatch = HSMDispatch.auto
    /// The fastest round trip within which `auto` runs calls inline. SoftHSM and NSS softokn
    /// answer in 1–3 µs; a module behind a socket (p11-kit remoting, tpm2-abrmd) in 15 µs or more,
    /// and an HSM across a LAN in hundreds.
    public var inlineThreshold: Duration = .microseconds(10)

    /// Whether decryption works on session copies of the token keys.
    public enum SessionKeyCopies: String, Sendable, Hashable, CaseIterable {
        /// On for SoftHSM, whose token objects cost a file check per use; off elsewhere.
        case auto
        case on
        case off
    }

    public init(modulePath: String, tokenLabel: String, pin: PINSource) {
        self.modulePath = modulePath
        self.tokenLabel = tokenLabel
        self.pin = pin
    }

    /// Sets the token from a label or an RFC 7512 `pkcs11:` URI, which may also name the module
    /// (`module-path`) and a PIN file (`pin-source=file:…`).
    public mutating func setToken(_ labelOrURI: String) throws(PKCS11Error) {
        guard labelOrURI.hasPrefix("pkcs11:") else {
            tokenLabel = labelOrURI
            return
        }
        let uri = try PKCS11URI(labelOrURI)
        if let token = uri.token { tokenLabel = token }
        if let module = uri.modulePath { modulePath = module }
        if let source = uri.pinSource {
            guard source.hasPrefix("file:") else { throw .invalidInput("pin-source must be a file: URI") }
            pin = .file(String(source.dropFirst("file:".count)).replacingOccurrences(of: "//", with: "", options: .anchored))
        }
    }
}
