import Crypto

/// The sender's side of HPKE in auth mode (RFC 9180 §5.1.3, `SetupAuthS`) for the DHKEM suites
/// of ``HPKESuite``, with the static key behind ``HPKESenderKey`` so that an HSM can hold it.
/// The key schedule is RFC 9180's, written out: swift-crypto's `HPKE.Sender` asks for an
/// in-memory private key.
public enum HPKEAuthSender {
    /// `mode_auth`.
    static let modeAuth: UInt8 = 0x02

    /// `SetupAuthS(pkR, info, skS)` with the given ephemeral key: returns `enc` and the context
    /// that seals messages. Package-only: a caller that chose the ephemeral key could reuse it, and
    /// with it the AES-GCM key and nonce; only the RFC's test vectors name one.
    package static func setup(
        suite: HPKESuite, recipientKey: [UInt8], info: [UInt8], senderKey: any HPKESenderKey,
        ephemeralKey: any HPKEEphemeralKey
    ) async throws -> (encapsulatedKey: [UInt8], context: HPKESenderContext) {
        guard recipientKey.count == suite.publicKeyLength, recipientKey.first == 0x04 else { throw HPKEError.invalidRecipientKey }
        let senderPublic = senderKey.serializedPublicKey
        let enc = ephemeralKey.serializedPublicKey
        guard senderPublic.count == suite.publicKeyLength, enc.count == suite.publicKeyLength else { throw HPKEError.keyNotOfSuite }

        // AuthEncap (§4.1): dh = DH(skE, pkR) ‖ DH(skS, pkR); kem_context = enc ‖ pkR ‖ pkS.
        let ephemeralSecret = try ephemeralKey.sharedSecret(with: recipientKey)
        let innerHash = try await senderKey.hashOfSharedSecret(
            with: recipientKey, prefix: suite.eaePRKInnerPrefix(ephemeralSharedSecret: ephemeralSecret), suite: suite)
        guard innerHash.count == suite.hashLength else {
            throw HPKEError.senderKeyFailed("a digest of \(innerHash.count) bytes, not \(suite.hashLength)")
        }
        let eaePRK = suite.eaePRK(innerHash: innerHash)
        let sharedSecret = suite.labeledExpand(
            prk: eaePRK, suiteID: suite.kemSuiteID, label: "shared_secret", info: enc + recipientKey + senderPublic,
            length: suite.sharedSecretLength)
        return (enc, keySchedule(suite: suite, sharedSecret: sharedSecret, info: info))
    }

    /// `KeySchedule<ROLE>(mode_auth, shared_secret, info, "", "")` (§5.1).
    static func keySchedule(suite: HPKESuite, sharedSecret: [UInt8], info: [UInt8]) -> HPKESenderContext {
        let suiteID = suite.hpkeSuiteID
        let pskIDHash = suite.labeledExtract(salt: [], suiteID: suiteID, label: "psk_id_hash", ikm: [])
        let infoHash = suite.labeledExtract(salt: [], suiteID: suiteID, label: "info_hash", ikm: info)
        let context = [modeAuth] + pskIDHash + infoHash
        let secret = suite.labeledExtract(salt: sharedSecret, suiteID: suiteID, label: "secret", ikm: [])
        return HPKESenderContext(
            sharedSecret: sharedSecret,
            keyScheduleContext: context,
            key: suite.labeledExpand(prk: secret, suiteID: suiteID, label: "key", info: context, length: suite.keyLength),
            baseNonce: suite.labeledExpand(prk: secret, suiteID: suiteID, label: "base_nonce", info: context, length: suite.nonceLength),
            exporterSecret: suite.labeledExpand(prk: secret, suiteID: suiteID, label: "exp", info: context, length: suite.hashLength)
        )
    }

    /// One message in Apple's suite (DHKEM(P-384, HKDF-SHA384), HKDF-SHA384, AES-256-GCM), sealed
    /// with a fresh ephemeral key: the single-shot `SealAuth` of §6.1.
    public static func seal(
        _ plaintext: [UInt8], recipientKey: [UInt8], info: [UInt8], additionalData: [UInt8] = [], senderKey: any HPKESenderKey
    ) async throws -> HPKESealedMessage {
        let (enc, initial) = try await setup(
            suite: .p384SHA384AES256GCM, recipientKey: recipientKey, info: info, senderKey: senderKey,
            ephemeralKey: P384.KeyAgreement.PrivateKey())
        var context = initial
        return HPKESealedMessage(encapsulatedKey: enc, ciphertext: try context.seal(plaintext, additionalData: additionalData))
    }
}
