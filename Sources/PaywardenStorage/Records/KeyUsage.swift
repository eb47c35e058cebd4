/// The rows one HSM key still protects, by what it protects them for.
public struct KeyUsage: Sendable, Hashable {
    public enum Use: String, Sendable, CaseIterable {
        /// Registrations' data keys (live rows only: a tombstone has no payload).
        case registrationPayloads = "registration-payloads"
        /// High-value tokens' data keys.
        case tokenPayloads = "token-payloads"
        /// High-value tokens' fingerprints (the HMAC key).
        case tokenFingerprints = "token-fingerprints"
    }

    public var use: Use
    public var keyID: String
    public var rows: Int

    public init(use: Use, keyID: String, rows: Int) {
        self.use = use
        self.keyID = keyID
        self.rows = rows
    }
}
