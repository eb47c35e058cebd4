/// An operation Paywarden needs that this HSM cannot run: what it lacks, in Cryptoki's terms, and
/// what would provide it. Permanent for this module and configuration, so no retry helps; an
/// operator reads it in `hsm status` and in every refusal it causes.
public struct CapabilityGap: Sendable, Hashable, CustomStringConvertible {
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        /// EC_v1: ECDH on P-256 followed by the one-step KDF.
        case ecdhP256 = "ECDH on P-256"
        /// RSA_v1: RSA-OAEP with SHA-256.
        case rsaOAEPSHA256 = "RSA-OAEP-SHA256 decryption"
        /// Protecting data keys under a key-encrypting key: RFC 5649 key wrap, or AES-GCM.
        case dataKeyProtection = "AES key wrap or AES-GCM for data keys"
        /// Keyed hashes computed in the HSM.
        case hmacSHA256 = "HMAC-SHA256"

        /// What decrypting payment tokens needs, one operation per token version.
        public static let tokenDecryption: [Operation] = [.ecdhP256, .rsaOAEPSHA256]
        /// What keeping data sealed under HSM keys needs (envelope encryption and keyed look-ups).
        public static let dataProtection: [Operation] = [.dataKeyProtection, .hmacSHA256]
    }

    public let operation: Operation
    /// The paths the probe tried, none of which works here.
    public let missing: String
    /// The HSM feature, or the setting, that would provide a path.
    public let remedy: String

    public var description: String { "the HSM cannot run \(operation.rawValue): \(missing); no retry helps: \(remedy)" }

    /// The gap for `operation` given what the probe found, or nil when a path is in use.
    static func find(_ operation: Operation, in capabilities: Capabilities, configuration: HSMConfiguration) -> CapabilityGap? {
        guard capabilities.isProbed else { return nil }
        switch operation {
        case .ecdhP256: guard capabilities.ecdhPath == nil else { return nil }
        case .rsaOAEPSHA256: guard capabilities.rsaDecryptionPath == nil else { return nil }
        case .dataKeyProtection: guard capabilities.dataKeyWrapPath == nil else { return nil }
        case .hmacSHA256: guard !capabilities.hmacSHA256 else { return nil }
        }
        if !capabilities.makesSecretKeys && Operation.dataProtection.contains(operation) {
            return CapabilityGap(
                operation: operation,
                missing: "it makes no AES or generic secret key through PKCS#11 (C_CreateObject and C_GenerateKey refused; "
                    + "tpm2-pkcs11 1.9 makes them only with its own tool), whatever mechanisms it lists",
                remedy: "an HSM that generates AES-256 and generic secret keys through PKCS#11 would")
        }
        return missing(operation, configuration: configuration)
    }

    /// The gap for `operation` when no path for it passed the probe.
    static func missing(_ operation: Operation, configuration: HSMConfiguration) -> CapabilityGap {
        switch operation {
        case .ecdhP256:
            let extractable = configuration.allowExtractableSharedSecret
            return CapabilityGap(
                operation: operation,
                missing: "it runs neither CKM_ECDH1_DERIVE with CKD_SHA256_KDF_SP800 nor CKM_ECDH1_DERIVE with CKD_NULL into a "
                    + "sensitive secret digested by C_DigestKey\(extractable ? " nor into an extractable secret" : "")",
                remedy: "an HSM, or a PKCS#11 client library, that runs CKM_ECDH1_DERIVE on P-256 with one of these would"
                    + (extractable
                        ? ""
                        : ", or PAYWARDEN_HSM_ALLOW_EXTRACTABLE_ECDH=true where the module derives an extractable secret "
                            + "(the shared secret then leaves the HSM)"))
        case .rsaOAEPSHA256:
            let software = configuration.allowSoftwareOAEPDecoding
            return CapabilityGap(
                operation: operation,
                missing: "it runs neither C_UnwrapKey nor C_Decrypt with CKM_RSA_PKCS_OAEP and SHA-256"
                    + (software ? " nor CKM_RSA_X_509" : ""),
                remedy: "an HSM that decrypts RSA-OAEP with SHA-256 would"
                    + (software
                        ? ""
                        : ", or PAYWARDEN_HSM_ALLOW_SOFTWARE_OAEP=true where the module decrypts raw RSA (CKM_RSA_X_509)"))
        case .dataKeyProtection:
            return CapabilityGap(
                operation: operation,
                missing: "it wraps with neither CKM_AES_KEY_WRAP_PAD (RFC 5649) nor CKM_AES_GCM under an AES-256 key",
                remedy: "an HSM, or a PKCS#11 client library, that runs either with AES-256 keys would (p11-kit's client carries "
                    + "AES-GCM and key-wrap parameters from 0.25)")
        case .hmacSHA256:
            return CapabilityGap(
                operation: operation, missing: "it does not run CKM_SHA256_HMAC with a generic secret key",
                remedy: "an HSM that computes HMAC-SHA256 with a generic secret key would")
        }
    }
}
