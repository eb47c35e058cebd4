import Foundation
import KeyCustody
import PKCS11

/// `keys create` and `keys import` refuse a key the HSM could not use for its purpose (an EC
/// processing key without ECDH, an identity key without signing, a new key whose CSR the HSM
/// could not sign), found by the capability probe on throw-away keys before anything is made.
/// `--allow-unusable` makes it anyway, with a warning: an operator preparing keys before an HSM
/// upgrade.
enum UnusableKeyRefusal {
    /// `signsItsCSR`: the key is made here and signs its own certification request, so a
    /// processing key must sign as well as decrypt (an imported one comes with its certificate).
    static func check(
        _ hsm: HSM, algorithm: KeyAlgorithm, purpose: KeyPurpose, signsItsCSR: Bool, allowUnusable: Bool
    ) async throws {
        let uses: Set<IntendedKeyUse> = purpose != .processing ? [.signing] : (signsItsCSR ? [.decryption, .signing] : [.decryption])
        guard let (use, gap) = try await hsm.unusableReason(of: algorithm, for: uses) else { return }
        // A processing key that cannot sign decrypts well enough: what it cannot do is sign its CSR.
        let reason = purpose == .processing && use == .signing ? "its CSR cannot be signed: \(gap)" : gap
        let what = "an \(algorithm == .ecP256 ? "EC" : "RSA") \(purpose.rawValue) key"
        if allowUnusable {
            FileHandle.standardError.write(
                Data("paywarden: warning: this HSM cannot use \(what) yet (\(reason)); making it anyway, as --allow-unusable asks\n".utf8))
            return
        }
        throw CommandFailure(
            .misconfiguration,
            "refused: this HSM cannot use \(what): \(reason); nothing was made. --allow-unusable makes it anyway (to prepare keys "
                + "before an HSM upgrade)")
    }
}
