import Foundation

/// Which HSM to use and how. Every setting has a default; the environment names are part of
/// Paywarden's operator contract.
public struct HSMConfiguration: Sendable, Hashable {
    public static let defaultModulePath = "/usr/lib/softhsm/libsofthsm2.so"
    public static let defaultTokenLabel = "paywarden"

    /// `PAYWARDEN_PKCS11_MODULE`: the vendor's PKCS#11 library.
    public var modulePath: String
    /// `PAYWARDEN_TOKEN_LABEL`: the token, found by label because slot ids move.
    public var tokenLabel: String
    /// `PAYWARDEN_PIN_FILE`, else `PAYWARDEN_PIN`.
    public var pin: PINSource
    /// `PAYWARDEN_HSM_WORKERS`: sessions and threads doing HSM work (default: the core count).
    public var workers: Int
    /// `PAYWARDEN_HSM_MAX_PENDING`: operations allowed to wait for a worker before new ones are
    /// refused as overloaded.
    public var maxPendingOperations: Int
    /// `PAYWARDEN_HSM_ALLOW_EXTRACTABLE_ECDH`: permits the weakest ECDH path, where Z leaves the
    /// HSM. Off by default.
    public var allowExtractableSharedSecret: Bool
    /// `PAYWARDEN_HSM_ALLOW_SOFTWARE_OAEP`: permits raw RSA in the HSM with OAEP decoded by
    /// OpenSSL, for HSMs without OAEP-SHA256 (SoftHSM). Off by default.
    public var allowSoftwareOAEPDecoding: Bool
    /// `PAYWARDEN_HSM_SESSION_KEY_COPIES`: whether decryption uses per-session copies of the
    /// token keys (see ``SessionKeyCopies``). `auto` by default.
    public var sessionKeyCopies: SessionKeyCopies = .auto

    /// Whether decryption works on session copies of the token keys.
    public enum SessionKeyCopies: String, Sendable, Hashable, CaseIterable {
        /// On for SoftHSM, whose token objects cost a file check per use; off elsewhere.
        case auto
        case on
        case off
    }

    public init(
        modulePath: String = defaultModulePath,
        tokenLabel: String = defaultTokenLabel,
        pin: PINSource = .environment("PAYWARDEN_PIN"),
        workers: Int = ProcessInfo.processInfo.activeProcessorCount,
        maxPendingOperations: Int = 256,
        allowExtractableSharedSecret: Bool = false,
        allowSoftwareOAEPDecoding: Bool = false
    ) {
        self.modulePath = modulePath
        self.tokenLabel = tokenLabel
        self.pin = pin
        self.workers = workers
        self.maxPendingOperations = maxPendingOperations
        self.allowExtractableSharedSecret = allowExtractableSharedSecret
        self.allowSoftwareOAEPDecoding = allowSoftwareOAEPDecoding
    }

    /// Reads the configuration from the environment. A `pkcs11:` URI in `PAYWARDEN_TOKEN_LABEL`
    /// may name the token, the module (`module-path`) and a PIN file (`pin-source=file:…`).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(PKCS11Error) -> HSMConfiguration {
        var configuration = HSMConfiguration()
        if let module = environment["PAYWARDEN_PKCS11_MODULE"], !module.isEmpty { configuration.modulePath = module }
        if let label = environment["PAYWARDEN_TOKEN_LABEL"], !label.isEmpty { try configuration.setToken(label) }
        if let file = environment["PAYWARDEN_PIN_FILE"], !file.isEmpty { configuration.pin = .file(file) }
        if let workers = environment["PAYWARDEN_HSM_WORKERS"] {
            guard let count = Int(workers), (1...256).contains(count) else {
                throw .invalidInput("PAYWARDEN_HSM_WORKERS must be a number from 1 to 256")
            }
            configuration.workers = count
        }
        if let pending = environment["PAYWARDEN_HSM_MAX_PENDING"] {
            guard let count = Int(pending), count > 0 else { throw .invalidInput("PAYWARDEN_HSM_MAX_PENDING must be a positive number") }
            configuration.maxPendingOperations = count
        }
        configuration.allowExtractableSharedSecret = try flag(environment, "PAYWARDEN_HSM_ALLOW_EXTRACTABLE_ECDH")
        configuration.allowSoftwareOAEPDecoding = try flag(environment, "PAYWARDEN_HSM_ALLOW_SOFTWARE_OAEP")
        if let copies = environment["PAYWARDEN_HSM_SESSION_KEY_COPIES"], !copies.isEmpty {
            guard let value = SessionKeyCopies(rawValue: copies.lowercased()) else {
                throw .invalidInput("PAYWARDEN_HSM_SESSION_KEY_COPIES must be auto, on or off")
            }
            configuration.sessionKeyCopies = value
        }
        return configuration
    }

    /// Sets the token from a label or a `pkcs11:` URI.
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

    private static func flag(_ environment: [String: String], _ name: String) throws(PKCS11Error) -> Bool {
        switch environment[name]?.lowercased() {
        case nil, "", "0", "false", "no": return false
        case "1", "true", "yes": return true
        default: throw .invalidInput("\(name) must be true or false")
        }
    }
}
