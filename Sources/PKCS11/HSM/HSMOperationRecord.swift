import Foundation

/// One key operation as it happened, for whoever measures them (the server counts each and, with
/// tracing on, turns it into a span, through ``HSMConfiguration/operationObserver``): what was done
/// and on which mechanism path, when, how long it waited for a worker and how long it took. Never a
/// key's bytes, a key id or an input.
public struct HSMOperationRecord: Sendable {
    /// Every ``operation`` an HSM reports.
    public static let operations = [
        "ecdh-kdf", "rsa-oaep-decrypt", "rsa-pkcs1-sign", "rsa-pss-sign", "ecdsa-sign", "aes-gcm-seal", "aes-gcm-open", "aes-key-wrap",
        "aes-key-unwrap", "hmac-sha256",
    ]

    /// What was done: `ecdh-kdf`, `rsa-oaep-decrypt`, `ecdsa-sign`, `aes-gcm-seal`, …
    public let operation: String
    /// The mechanism path chosen for it, when there is a choice (``ECDHPath``, ``RSADecryptionPath``).
    public let path: String?
    /// Wall-clock start, nanoseconds since 1970 (what tracers time spans by).
    public let startNanosecondsSinceEpoch: UInt64
    /// Waiting in the workers' queue; nil when it ran inline on the caller's thread.
    public let queueWait: Duration?
    public let duration: Duration
    public let failed: Bool

    public init(
        operation: String, path: String?, startNanosecondsSinceEpoch: UInt64, queueWait: Duration?, duration: Duration, failed: Bool
    ) {
        self.operation = operation
        self.path = path
        self.startNanosecondsSinceEpoch = startNanosecondsSinceEpoch
        self.queueWait = queueWait
        self.duration = duration
        self.failed = failed
    }
}
