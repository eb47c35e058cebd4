import Foundation
import KeyCustody
import PKCS11

/// `keys create` and `keys import` refuse a key the HSM could not use for its purpose (an EC
/// processing key without ECDH, an identity key without signing), found by the capability probe
/// on throw-away keys before anything is made. `--allow-unusable` makes it anyway, with a
/// warning: an operator preparing keys before an HSM upgrade.
enum UnusableKeyRefusal {
    static func check(_ hsm: HSM, algorithm: KeyAlgorithmChoice, purpose: KeyPurpose, allowUnusable: Bool) async throws {
        let use: IntendedKeyUse = purpose == .processing ? .decryption : .signing
        guard let reason = try await hsm.unusableReason(of: algorithm == .ec ? .ecP256 : .rsa2048, for: use) else { return }
        let what = "an \(algorithm.rawValue.uppercased()) \(purpose.rawValue) key"
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
