import Foundation
import KeyCustody
import PKCS11

/// `keys create`, `keys rotate` and `keys import` refuse a key the HSM could not use for its
/// purpose (an EC processing key without ECDH, an identity key without signing), found by the
/// capability probe on throw-away keys before anything is made. `--allow-unusable` makes it
/// anyway, with a warning: an operator preparing keys before an HSM upgrade. A key made here signs
/// its own CSR, so an HSM that cannot sign with it is refused whatever the flag: the key could not
/// be made.
enum UnusableKeyRefusal {
    /// `signsItsCSR`: the key is made here and signs its own certification request (an imported
    /// one comes with its certificate).
    static func check(
        _ hsm: HSM, algorithm: KeyAlgorithm, purpose: KeyPurpose, signsItsCSR: Bool, allowUnusable: Bool
    ) async throws {
        var uses: Set<IntendedKeyUse> = purpose == .processing ? [.decryption] : [.signing]
        if signsItsCSR { uses.insert(.signing) }
        let refusals = try await hsm.unusableReasons(of: algorithm, for: uses)
        guard !refusals.isEmpty else { return }
        let what = "an \(algorithm == .ecP256 ? "EC" : "RSA") \(purpose.rawValue) key"
        // A processing key's signing is for its CSR alone: say so, since it decrypts with the rest.
        let reasons = [refusals[.decryption], refusals[.signing].map { purpose == .processing ? "its CSR cannot be signed: \($0)" : $0 }]
            .compactMap { $0 }.joined(separator: "; and ")
        if signsItsCSR, refusals[.signing] != nil {
            throw CommandFailure(
                .misconfiguration,
                "refused: this HSM cannot use \(what): \(reasons); nothing was made, and --allow-unusable cannot help: a key made "
                    + "here signs its own CSR")
        }
        if allowUnusable {
            FileHandle.standardError.write(
                Data("paywarden: warning: this HSM cannot use \(what) yet (\(reasons)); making it anyway, as --allow-unusable asks\n".utf8))
            return
        }
        throw CommandFailure(
            .misconfiguration,
            "refused: this HSM cannot use \(what): \(reasons); nothing was made. --allow-unusable makes it anyway (to prepare keys "
                + "before an HSM upgrade)")
    }
}
