import Crypto
import Foundation
import SwiftASN1
import Synchronization
// Validating at a fixed time (the signing time, not now) is what swift-certificates offers this SPI for.
@_spi(FixedExpiryValidationTime) import X509
import _CryptoExtras

/// Verifies signing chains once per distinct set of certificates and remembers the verdict, so
/// a token costs one signature verification, not a chain walk. Apple signs with a handful of
/// leaves at a time, so the cache stays tiny; it is bounded all the same.
final class SignerChainCache: Sendable {
    /// What the verdict depends on, in the form ``verify(certificates:signer:)`` reads it: the
    /// certificates, the issuer, and the serial without leading zero octets. None of it is covered
    /// by the signature, so an encoding the verdict does not see must not make a new entry: else
    /// a stream of re-encoded copies of one genuine token would flush the cache.
    private struct Key: Hashable {
        let certificates: [[UInt8]]
        let issuer: [UInt8]
        let serialNumber: ArraySlice<UInt8>
    }

    let anchors: TrustAnchors
    private let verdicts = Mutex<[Key: Result<SignerVerdict, PaymentTokenError>]>([:])
    /// The last verdict: Apple signs with one leaf at a time, and comparing bytes is cheaper
    /// than hashing them for the dictionary.
    private let last = Mutex<(Key, Result<SignerVerdict, PaymentTokenError>)?>(nil)
    private static let capacity = 256

    init(anchors: TrustAnchors) {
        self.anchors = anchors
    }

    /// The verdicts held, for tests and diagnostics.
    var count: Int { verdicts.withLock { $0.count } }

    func verdict(certificates: [[UInt8]], signer: SignerInfo) async -> Result<SignerVerdict, PaymentTokenError> {
        let key = Key(certificates: certificates, issuer: signer.issuer, serialNumber: Self.trimmed(signer.serialNumber))
        if let (lastKey, verdict) = last.withLock({ $0 }), lastKey == key { return verdict }
        if let cached = verdicts.withLock({ $0[key] }) {
            last.withLock { $0 = (key, cached) }
            return cached
        }
        let verdict: SignerVerdict
        do {
            verdict = try await verify(certificates: certificates, signer: signer)
        } catch {
            // Failures are not cached: a stream of bad chains must not evict the good ones.
            return .failure(error)
        }
        verdicts.withLock { cache in
            if cache.count >= Self.capacity { cache.removeAll(keepingCapacity: true) }
            cache[key] = .success(verdict)
        }
        last.withLock { $0 = (key, .success(verdict)) }
        return .success(verdict)
    }

    private func verify(certificates: [[UInt8]], signer: SignerInfo) async throws(PaymentTokenError) -> SignerVerdict {
        // Apple's signatures carry exactly the leaf and the intermediate; refusing anything else
        // before parsing keeps padded certificate lists from buying fresh chain walks.
        guard certificates.count == 2 else {
            throw .chain(
                "the signature carries \(certificates.count) certificates; Apple's carries the signing certificate and its intermediate")
        }
        var parsed: [Certificate] = []
        for der in certificates {
            guard let certificate = try? Certificate(derEncoded: der) else {
                throw .chain("a certificate in the signature is unreadable")
            }
            parsed.append(certificate)
        }
        guard let issuer = try? DistinguishedName(derEncoded: DER.parse(signer.issuer)) else {
            throw .signature("the signer's issuer name is unreadable")
        }
        let serial = Self.trimmed(signer.serialNumber)
        guard let leaf = parsed.first(where: { $0.issuer == issuer && Self.trimmed(Array($0.serialNumber.bytes)) == serial }) else {
            throw .signature("no certificate in the signature matches the signer")
        }
        guard leaf.extensions[oid: ApplePayOID.paymentTokenSigningLeaf] != nil else {
            throw .chain("the signing certificate lacks extension 1.2.840.113635.100.6.29: it is not an Apple Pay signing certificate")
        }
        let intermediates = parsed.filter { $0 != leaf }
        guard let intermediate = intermediates.first(where: { $0.subject == leaf.issuer }) else {
            throw .chain("the signature does not carry the intermediate that issued the signing certificate")
        }
        guard intermediate.extensions[oid: ApplePayOID.paymentTokenIntermediate] != nil else {
            throw .chain("the intermediate lacks extension 1.2.840.113635.100.6.2.14: it is not Apple's payment intermediate")
        }
        guard let root = anchors.certificates.first(where: { $0.subject == intermediate.issuer }) else {
            throw .chain("the chain does not end in a trusted root (\(anchors.name)); the token was not signed by Apple")
        }
        // Validate at a moment inside every certificate's validity; per token only the signing
        // time is then compared with the common period.
        let validFrom = max(leaf.notValidBefore, intermediate.notValidBefore, root.notValidBefore)
        let validUntil = min(leaf.notValidAfter, intermediate.notValidAfter, root.notValidAfter)
        guard validFrom <= validUntil else { throw .chain("the chain's certificates were never valid at the same time") }

        var verifier = Verifier(rootCertificates: CertificateStore(anchors.certificates)) {
            RFC5280Policy(fixedExpiryValidationTime: validFrom)
            ApplePaySigningChainPolicy()
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        guard case .validCertificate(let chain) = result else {
            if case .couldNotValidate(let failures) = result, let reason = failures.first?.policyFailureReason {
                throw .chain("the signing chain does not verify to \(anchors.name): \(reason)")
            }
            throw .chain("the signing chain does not verify to \(anchors.name)")
        }

        // The period in which the chain the verifier built was valid, root included.
        let chainFrom = chain.map(\.notValidBefore).max() ?? validFrom
        let chainUntil = chain.map(\.notValidAfter).min() ?? validUntil

        let signingKey: SignerVerdict.SigningKey
        if let key = P256.Signing.PublicKey(leaf.publicKey) {
            signingKey = .p256(key)
        } else if let key = _RSA.Signing.PublicKey(leaf.publicKey) {
            signingKey = .rsa(key)
        } else {
            throw .chain("the signing certificate's key is neither P-256 nor RSA")
        }
        return SignerVerdict(
            signingKey: signingKey, validFrom: chainFrom, validUntil: chainUntil,
            chain: chain.map { String(describing: $0.subject) })
    }

    private static func trimmed(_ integer: [UInt8]) -> ArraySlice<UInt8> {
        integer.drop { $0 == 0 }
    }
}
