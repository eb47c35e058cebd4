import ApplePay
import Crypto
import Foundation
import KeyCustody
import PKCS11
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The usage-information sender key (HPKE auth mode, P-384) in a real token: in the HSM where the
/// probe found P-384 ECDH, else wrapped by an HSM key; what it seals opens with swift-crypto's
/// recipient, an implementation independent of ours.
@Suite(.serialized, .releasesTestResources)
struct UsageInformationSenderKeyTests {
    /// Apple's `info`: the label's 41 bytes and SHA-256 of the merchant token identifier.
    static func info(_ merchantTokenIdentifier: String) -> [UInt8] {
        Array("ApplePayMerchantTokenUsageInformation_1.0".utf8) + Array(SHA256.hash(data: Array(merchantTokenIdentifier.utf8)))
    }

    /// Seals with `sender` to a fresh device key and opens with swift-crypto's `HPKE.Recipient`.
    func sealAndOpen(_ sender: any HPKESenderKey, expectedSender: [UInt8]) async throws {
        let device = P384.KeyAgreement.PrivateKey()
        let info = Self.info("DNITHE301234567890")
        for plaintext in [Array("{}".utf8), (0..<3000).map { UInt8($0 & 0xFF) }] {
            let sealed = try await HPKEAuthSender.seal(
                plaintext, recipientKey: Array(device.publicKey.x963Representation), info: info, senderKey: sender)
            var recipient = try HPKE.Recipient(
                privateKey: device, ciphersuite: .P384_SHA384_AES_GCM_256, info: Data(info),
                encapsulatedKey: Data(sealed.encapsulatedKey),
                authenticatedBy: try P384.KeyAgreement.PublicKey(x963Representation: expectedSender))
            #expect(Array(try recipient.open(sealed.ciphertext)) == plaintext)
        }
    }

    /// SoftHSM and NSS softokn both do P-384 ECDH into a sensitive secret and `C_DigestKey` it
    /// with SHA-384: the key is made in the HSM, sensitive and never extractable, and the shared
    /// secret never leaves it.
    @Test func aKeyInTheHSMSealsWhatSwiftCryptoOpens() async throws {
        let token = try await TestToken.make()
        let hsm = try await token.open()
        #expect(hsm.capabilities.p384ECDHPath == .digestKey, "\(hsm.capabilities.report)")
        #expect(hsm.capabilities.report.contains("P-384 ECDH: p384-ecdh+sensitive-z+digest-key: in use"))
        #expect(SenderKeyCustody.forNewKeys(hsm.capabilities) == .inHSM)

        let keys = SenderKeys(hsm: hsm)
        let reference = try await keys.create(label: "usage-information merchant.com.example")
        #expect(reference.custody == .inHSM)
        #expect(reference.wrappedSeed == nil)
        #expect(reference.publicKey.count == 97)
        #expect(try await hsm.p384PublicKey(reference.hsmKeyID) == reference.publicKey)

        let attributes = try await hsm.withSession { session throws(PKCS11Error) in
            let handle = try session.tokenObjects(.privateKey, id: reference.hsmKeyID)[0]
            return try session.attributes(of: handle, [.sensitive, .extractable, .derive, .sign])
        }
        #expect(attributes[.sensitive] == [1])
        #expect(attributes[.extractable] == [0])
        #expect(attributes[.derive] == [1])
        #expect(attributes[.sign] == [0])

        try await sealAndOpen(try await keys.open(reference), expectedSender: reference.publicKey)

        // No derived secret is left behind in any session.
        let secrets = try await hsm.withSession { session throws(PKCS11Error) in try session.findObjects([.objectClass(.secretKey)]).count }
        #expect(secrets == 0)

        // A peer point off the curve is bad input, refused before the HSM is asked.
        var offCurve = reference.publicKey
        offCurve[96] ^= 1
        await #expect(throws: PKCS11Error.self) {
            _ = try await hsm.sha384OfP384SharedSecret(reference.hsmKeyID, peerPoint: offCurve, prefix: [])
        }
        try await keys.destroy(reference)
        await #expect(throws: PKCS11Error.self) { _ = try await hsm.p384PublicKey(reference.hsmKeyID) }
        await hsm.close()
    }

    /// The fallback, forced: a seed wrapped by an HSM key-encrypting key; the P-384 key is derived
    /// from it for each use and matches the recorded public key.
    @Test func aWrappedKeySealsWhatSwiftCryptoOpens() async throws {
        let token = try await TestToken.make()
        let hsm = try await token.open()
        #expect(SenderKeyCustody.forNewKeys(hsm.capabilities, forceWrapped: true) == .wrappedByHSMKey)
        let keys = SenderKeys(hsm: hsm)
        let reference = try await keys.create(label: "usage-information wrapped", forceWrapped: true)
        #expect(reference.custody == .wrappedByHSMKey)
        let wrapped = try #require(reference.wrappedSeed)
        #expect(wrapped.bytes.count >= 40, "a 32-byte seed, wrapped")

        let opened = try await keys.open(reference)
        #expect(opened.serializedPublicKey == reference.publicKey)
        #expect(try await keys.open(reference).serializedPublicKey == reference.publicKey, "the same key each time")
        try await sealAndOpen(opened, expectedSender: reference.publicKey)

        // A changed wrapped seed does not open, or opens to another key that is refused.
        var tampered = wrapped.bytes
        tampered[tampered.count - 1] ^= 1
        let forged = SenderKeyReference(
            custody: .wrappedByHSMKey, hsmKeyID: reference.hsmKeyID, publicKey: reference.publicKey,
            wrappedSeed: WrappedDataKey(path: wrapped.path, bytes: tampered))
        await #expect(throws: (any Error).self) { _ = try await keys.open(forged) }

        try await keys.destroy(reference)
        await #expect(throws: (any Error).self) { _ = try await keys.open(reference) }
        await hsm.close()
    }
}
