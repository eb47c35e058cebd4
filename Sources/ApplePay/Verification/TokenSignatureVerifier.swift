import Crypto
import Foundation
import _CryptoExtras

/// Runs every step of Apple's signature verification on every token: BER CMS, exactly one
/// signer, the chain to the pinned root with Apple's OIDs, valid at the signing time, the
/// signed attributes and `messageDigest` over the decoded content, the signature itself, and
/// the signing-time window. None of it can be switched off; only the clock can be set.
public final class TokenSignatureVerifier: Sendable {
    /// How far the CMS signing time may be from now (Apple's guidance: 5 minutes).
    public let signingTimeWindow: TimeInterval
    /// The windows configuration may set, in seconds: up to a day.
    public static let allowedSigningTimeWindows: ClosedRange<TimeInterval> = 1...86_400
    private let chains: SignerChainCache

    public init(anchors: TrustAnchors, signingTimeWindow: TimeInterval = 300) {
        self.signingTimeWindow = signingTimeWindow
        self.chains = SignerChainCache(anchors: anchors)
    }

    public var anchors: TrustAnchors { chains.anchors }

    /// How many signing chains have a remembered verdict (at most 256).
    public var cachedChainCount: Int { chains.count }

    /// Verifies `token` as of `now`.
    public func verify(_ token: PaymentToken, now: Date) async -> SignatureVerification {
        var result = SignatureVerification()
        do throws(PaymentTokenError) {
            try await verify(token, now: now, into: &result)
        } catch {
            result.failure = error
        }
        return result
    }

    private func verify(_ token: PaymentToken, now: Date, into result: inout SignatureVerification) async throws(PaymentTokenError) {
        let signedData: SignedData
        do {
            signedData = try SignedData(ber: token.signature)
        } catch {
            throw .signature("the signature is not a detached CMS SignedData (\(error))")
        }
        guard signedData.signers.count == 1, let signer = signedData.signers.first else {
            throw .signature("the signature has \(signedData.signers.count) signers; Apple's has exactly one")
        }
        result.signingTime = signer.signingTime
        guard signer.digestAlgorithm == CMSObjectIdentifier.sha256 else {
            throw .signature("the signer's digest algorithm is not SHA-256")
        }
        let verdict = try await chains.verdict(certificates: signedData.certificates, signer: signer).get()
        result.chain = verdict.chain

        guard signer.contentType == CMSObjectIdentifier.data else {
            throw .signature("the signed content-type attribute is missing or not id-data")
        }
        guard let messageDigest = signer.messageDigest else { throw .signature("the signed message-digest attribute is missing") }
        guard Array(SHA256.hash(data: token.signedContent)) == messageDigest else {
            throw .signature(
                "messageDigest does not match the token's ephemeral key or wrapped key, data, transaction id and application data: the "
                    + "token was altered"
            )
        }

        switch (verdict.signingKey, token.version) {
        case (.p256(let key), .ecV1):
            result.signatureAlgorithm = "ecdsa-with-SHA256"
            guard signer.signatureAlgorithm == CMSObjectIdentifier.ecdsaWithSHA256 else {
                throw .signature("an EC_v1 token must be signed with ecdsa-with-SHA256")
            }
            guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: signer.signature),
                key.isValidSignature(signature, for: signer.signedAttributes)
            else {
                throw .signature(
                    "the ECDSA signature over the signed attributes does not verify: the signature or its attributes were altered")
            }
        case (.rsa(let key), .rsaV1):
            result.signatureAlgorithm = "sha256WithRSAEncryption"
            guard
                signer.signatureAlgorithm == CMSObjectIdentifier.sha256WithRSAEncryption
                    || signer.signatureAlgorithm == CMSObjectIdentifier.rsaEncryption
            else { throw .signature("an RSA_v1 token must be signed with sha256WithRSAEncryption") }
            guard
                key.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: signer.signature),
                    for: signer.signedAttributes, padding: .insecurePKCS1v1_5)
            else {
                throw .signature(
                    "the RSA signature over the signed attributes does not verify: the signature or its attributes were altered")
            }
        case (.p256, .rsaV1), (.rsa, .ecV1):
            throw .signature(
                "a \(token.version.rawValue) token signed by a \(token.version == .ecV1 ? "RSA" : "P-256") key: Apple never does that")
        }

        guard let signingTime = signer.signingTime else { throw .signature("the signed signing-time attribute is missing") }
        guard signingTime >= verdict.validFrom, signingTime <= verdict.validUntil else {
            throw .chain(
                "the signing chain was not valid at the signing time \(Self.iso8601(signingTime)) (valid "
                    + "\(Self.iso8601(verdict.validFrom)) to \(Self.iso8601(verdict.validUntil)))"
            )
        }
        let skew = now.timeIntervalSince(signingTime)
        guard abs(skew) <= signingTimeWindow else {
            throw PaymentTokenError(
                .signingTimeOutOfWindow,
                "the token was signed at \(Self.iso8601(signingTime)), \(Int(abs(skew))) s \(skew > 0 ? "ago" : "in the future"); "
                    + "tokens older or newer than \(Int(signingTimeWindow)) s are refused (a replayed or stale token, or a wrong clock)"
            )
        }
    }

    /// Only failures format dates: a formatter costs more than the rest of a verification step.
    private static func iso8601(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}
