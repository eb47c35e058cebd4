/// The `version` of a token's `paymentData`.
public enum PaymentTokenVersion: String, Sendable, Hashable, Codable {
    /// ECDH with an ephemeral P-256 key, AES-256-GCM. Everywhere.
    case ecV1 = "EC_v1"
    /// RSA-OAEP-wrapped AES-128-GCM key. China mainland.
    case rsaV1 = "RSA_v1"
}
