import Crypto

/// The one-step KDF of NIST SP 800-56A with SHA-256, one round, counter first:
/// `SHA-256(00000001 ‖ Z ‖ otherInfo)`, in software. The forge derives Apple's side with it and
/// ``SoftwareMerchantKeys`` the merchant's; each is still checked independently (the forge's
/// tokens against the HSM's derivation, the software keys against Apple's real vectors).
public enum OneStepKDF {
    public static func sha256(sharedSecret: SharedSecret, otherInfo: [UInt8]) -> SymmetricKey {
        var hasher = SHA256()
        hasher.update(data: [0, 0, 0, 1])
        sharedSecret.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        hasher.update(data: otherInfo)
        return SymmetricKey(data: hasher.finalize())
    }
}
