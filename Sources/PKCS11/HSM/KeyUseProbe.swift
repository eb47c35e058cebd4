import Crypto
import Foundation
import _CryptoExtras

/// What a new key must do in the HSM to be of use: decrypt payment tokens (a processing key), or
/// sign (an identity or upstream key's TLS handshakes and CSRs).
public enum IntendedKeyUse: String, Sendable, Hashable {
    case decryption
    case signing
}

extension HSM {
    /// Each of `uses` a key of `algorithm` could not do in this HSM, with why, found now on
    /// throw-away keys as the capability probe would; empty when it can do them all. Asked before
    /// a key is made, so that a key the HSM cannot use is refused at the first command that would
    /// need it. Every use is probed, so that a refusal names all that is missing. Refusals are
    /// only reported when the HSM passes its health check afterwards: a token that went away
    /// mid-probe is an outage (thrown), not a missing capability.
    public func unusableReasons(
        of algorithm: KeyAlgorithm, for uses: Set<IntendedKeyUse>
    ) async throws(PKCS11Error) -> [IntendedKeyUse: String] {
        let refusals = try await probeKeyUse(of: algorithm, for: uses)
        if !refusals.isEmpty { try await checkHealth() }
        return refusals
    }

    private func probeKeyUse(
        of algorithm: KeyAlgorithm, for uses: Set<IntendedKeyUse>
    ) async throws(PKCS11Error) -> [IntendedKeyUse: String] {
        let configuration = self.configuration
        let mechanisms = capabilities.mechanisms
        // Its throw-away key pairs are token objects on a module without session keys (tpm2-pkcs11).
        return try await creatingTokenObjects { session throws(PKCS11Error) -> [IntendedKeyUse: String] in
            var report: [String] = []
            var refusals: [IntendedKeyUse: String] = [:]
            switch algorithm {
            case .ecP256:
                if uses.contains(.decryption),
                    CapabilityProbe.probeECDH(session: session, mechanisms: mechanisms, configuration: configuration, report: &report)
                        == nil
                {
                    refusals[.decryption] = CapabilityGap.missing(.ecdhP256, configuration: configuration).description
                }
                if uses.contains(.signing) { refusals[.signing] = CapabilityProbe.probeECDSASigning(session: session, report: &report) }
            case .rsa2048 where uses.contains(.decryption):
                // One key pair answers both: the probe's RSA key decrypts and signs.
                let (path, _, signing) = CapabilityProbe.probeRSA(
                    session: session, mechanisms: mechanisms, configuration: configuration, report: &report)
                if path == nil { refusals[.decryption] = CapabilityGap.missing(.rsaOAEPSHA256, configuration: configuration).description }
                if uses.contains(.signing) && signing == nil { refusals[.signing] = CapabilityProbe.rsaSigningGap(report) }
            case .rsa2048:
                if uses.contains(.signing) { refusals[.signing] = CapabilityProbe.probeRSASigning(session: session, report: &report) }
            }
            return refusals
        }
    }
}

extension CapabilityProbe {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (CSRs, TLS 1.2 client authentication) on a throw-away key,
    /// by either path, verified in software: nil when it works, else why not.
    static func probeRSASigning(session: Session, report: inout [String]) -> String? {
        do {
            let (publicHandle, privateHandle) = try throwAwayKeyPair(
                session, .rsaKeyPairGeneration, report: &report,
                publicKey: [.ulong(.modulusBits, 2048), Attribute(.publicExponent, bytes: [1, 0, 1]), .bool(.verify, true)],
                privateKey: [.bool(.sensitive, true), .bool(.extractable, false), .bool(.sign, true)]
            )
            defer {
                try? session.destroyObject(privateHandle)
                try? session.destroyObject(publicHandle)
            }
            guard
                case .rsa(let modulus, let exponent) = try PublicKey(
                    keyType: .rsa, attributes: session.attributes(of: publicHandle, [.modulus, .publicExponent]))
            else { return "the token's RSA public key could not be read" }
            guard
                probeRSASigningPath(session: session, privateKey: privateHandle, modulus: modulus, exponent: exponent, report: &report)
                    == nil
            else { return nil }
            return rsaSigningGap(report)
        } catch {
            return "the HSM cannot sign with RSA: an RSA-2048 signing key could not be made (\(reason(error)))"
        }
    }

    /// Why RSA signing failed, from the signing ladder's lines of a probe's `report`.
    static func rsaSigningGap(_ report: [String]) -> String {
        "the HSM cannot sign with RSA: neither CKM_SHA256_RSA_PKCS nor CKM_RSA_PKCS over a software digest works ("
            + report.filter { $0.hasPrefix("RSA signing") }.joined(separator: "; ") + ")"
    }

    /// ECDSA P-256 over a SHA-256 digest on a throw-away key, verified in software: nil when it
    /// works, else why not.
    static func probeECDSASigning(session: Session, report: inout [String]) -> String? {
        let message = Array("capability probe: ECDSA".utf8)
        let digest = Array(SHA256.hash(data: message))
        do {
            let (publicHandle, privateHandle) = try throwAwayKeyPair(
                session, .ecKeyPairGeneration, report: &report,
                publicKey: [Attribute(.ecParams, bytes: KeyAlgorithm.p256Parameters), .bool(.verify, true)],
                privateKey: [.bool(.sensitive, true), .bool(.extractable, false), .bool(.sign, true)]
            )
            defer {
                try? session.destroyObject(privateHandle)
                try? session.destroyObject(publicHandle)
            }
            guard case .ecP256(let point) = try PublicKey(keyType: .ec, attributes: session.attributes(of: publicHandle, [.ecPoint]))
            else { return "the token's EC public key could not be read" }
            let raw = try session.signECDSA(privateKey: privateHandle, digest: digest)
            let key = try P256.Signing.PublicKey(x963Representation: point)
            let valid = key.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: raw), for: message)
            return valid ? nil : "the HSM cannot sign with ECDSA: its CKM_ECDSA signature does not verify"
        } catch {
            return "the HSM cannot sign with ECDSA: CKM_ECDSA on a P-256 key failed (\(reason(error)))"
        }
    }
}

extension HSM {
    /// How this module takes Paywarden's key templates, found on a throw-away sign-only RSA key
    /// pair (an identity key's, the template a module's attribute rules refuse first): "as
    /// specified", else how it was adapted, and a throw-away pair the module would not destroy,
    /// named so that it can be removed by hand. Throws when the module makes no such key at all.
    public func keyTemplateAdaptation() async throws(PKCS11Error) -> String {
        let label = "paywarden-template-probe"
        return try await creatingTokenObjects { session throws(PKCS11Error) -> String in
            let (key, adaptation) = try session.generateKeyPairAdapting(KeySpecification(label: label, algorithm: .rsa2048, usage: [.sign]))
            var text = adaptation ?? "as specified"
            do {
                try session.destroyKeyPair(id: key.id)
            } catch {
                text +=
                    "; the throw-away key pair it was found on (label \(label), CKA_ID \(key.id.hex)) could not be destroyed "
                    + "(\(CapabilityProbe.reason(error))): remove it with the HSM's own tools"
            }
            return text
        }
    }
}
