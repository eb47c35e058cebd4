import Crypto
import X509

/// The libFuzzer entry points' bodies for the Apple Pay parsers that read bytes from outside:
/// the token JSON (and the decrypted payload, read by the same reader) and, inside it, the BER
/// CMS signature with its certificates and signer. Thrown errors are the expected outcome for
/// nearly all inputs; a trap (crash, precondition, stack overflow, hang) is a bug.
///
/// The harnesses (`Fuzz/Harnesses`, built by `scripts/fuzz.sh` with `-sanitize=fuzzer,address`)
/// call these, and `FuzzCorpusTests` replays the committed corpus and every crash reproducer
/// through the same functions in the normal test run.
public enum ApplePayFuzzing {
    /// A payment token as a client posts it: JSON, then everything read from its fields before a
    /// key is touched (the CMS signature, the ephemeral public key, the signed content).
    public static func token(_ bytes: [UInt8]) {
        // A decrypted payload is read by the same reader: its typed form, metadata written back, masking.
        _ = DecryptedPayment(json: bytes)?.merchantTokenMetadata?.bytes
        _ = PaymentDataMasking.masked(bytes)
        guard let token = try? PaymentToken(json: bytes) else { return }
        _ = token.signedContent
        _ = token.transactionIDHex
        if let ephemeral = token.header.ephemeralPublicKey {
            _ = try? P256.KeyAgreement.PublicKey(derRepresentation: ephemeral)
        }
        signature(token.signature)
    }

    /// A detached CMS signature: the BER reader over every element, then SignedData, its
    /// certificates as swift-certificates reads them, and the signer's fields.
    public static func signature(_ bytes: [UInt8]) {
        if let root = try? BERReader.parse(bytes) { walk(root, in: bytes) }
        guard let signedData = try? SignedData(ber: bytes) else { return }
        for der in signedData.certificates { _ = try? Certificate(derEncoded: der) }
        for signer in signedData.signers {
            _ = try? P256.Signing.ECDSASignature(derRepresentation: signer.signature)
        }
    }

    /// Every constructed element's children and every string's octets: paths SignedData alone
    /// only takes for the elements Apple's layout puts there.
    private static func walk(_ node: BERNode, in bytes: [UInt8]) {
        guard node.isConstructed else { return }
        _ = try? node.octets(in: bytes)
        guard let children = try? node.children(in: bytes) else { return }
        for child in children { walk(child, in: bytes) }
    }
}
