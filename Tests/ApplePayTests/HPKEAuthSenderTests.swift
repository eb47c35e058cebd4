import ApplePay
import Crypto
import Foundation
import PaywardenPrimitives
import Testing

/// The HPKE auth-mode sender (RFC 9180 key schedule over ``HPKESenderKey``) against RFC 9180's
/// published test vectors and against swift-crypto's independent recipient.
///
/// RFC 9180 publishes no vectors for DHKEM(P-384, HKDF-SHA384): its Appendix A has the NIST
/// curves P-256 (A.3) and P-521 (A.6). The schedule is one code path for all three suites, with
/// only the hash and the sizes changing, so it is checked byte for byte on A.3.3 and A.6.3 (auth
/// mode), and on P-384 by swift-crypto's `HPKE.Recipient` opening what it sealed.
struct HPKEAuthSenderTests {
    /// One auth-mode vector: keys, every intermediate value, and the encryptions checked.
    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        let suite: HPKESuite
        let info, ikmE, skEm, pkEm, pkRm, skSm, pkSm, sharedSecret, keyScheduleContext, key, baseNonce, exporterSecret: String
        /// (sequence number, aad, ciphertext ‖ tag); the plaintext is the same for each.
        let encryptions: [(UInt64, String, String)]
        var testDescription: String { name }
    }

    static let plaintext = "4265617574792069732074727574682c20747275746820626561757479"

    static let vectors: [Vector] = [
        Vector(
            name: "RFC 9180 A.3.3: DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, auth",
            suite: .p256SHA256AES128GCM,
            info: "4f6465206f6e2061204772656369616e2055726e",
            ikmE: "798d82a8d9ea19dbc7f2c6dfa54e8a6706f7cdc119db0813dacf8440ab37c857",
            skEm: "6b8de0873aed0c1b2d09b8c7ed54cbf24fdf1dfc7a47fa501f918810642d7b91",
            pkEm: "042224f3ea800f7ec55c03f29fc9865f6ee27004f818fcbdc6dc68932c1e52e15b79e264a98f2c535ef06745f3d308624414153b22c"
                + "7332bc1e691cb4af4d53454",
            pkRm: "04423e363e1cd54ce7b7573110ac121399acbc9ed815fae03b72ffbd4c18b01836835c5a09513f28fc971b7266cfde2e96afe84bb0f"
                + "266920e82c4f53b36e1a78d",
            skSm: "1120ac99fb1fccc1e8230502d245719d1b217fe20505c7648795139d177f0de9",
            pkSm: "04a817a0902bf28e036d66add5d544cc3a0457eab150f104285df1e293b5c10eef8651213e43d9cd9086c80b309df22cf37609f58c"
                + "1127f7607e85f210b2804f73",
            sharedSecret: "d4aea336439aadf68f9348880aa358086f1480e7c167b6ef15453ba69b94b44f",
            keyScheduleContext: "02b88d4e6d91759e65e87c470e8b9141113e9ad5f0c8ceefc1e088c82e6980500798e486f9c9c09c9b5c753ac72d6005de"
                + "254c607d1b534ed11d493ae1c1d9ac85",
            key: "19aa8472b3fdc530392b0e54ca17c0f5",
            baseNonce: "b390052d26b67a5b8a8fcaa4",
            exporterSecret: "f152759972660eb0e1db880835abd5de1c39c8e9cd269f6f082ed80e28acb164",
            encryptions: [
                (0, "436f756e742d30", "82ffc8c44760db691a07c5627e5fc2c08e7a86979ee79b494a17cc3405446ac2bdb8f265db4a099ed3289ffe19"),
                (1, "436f756e742d31", "b0a705a54532c7b4f5907de51c13dffe1e08d55ee9ba59686114b05945494d96725b239468f1229e3966aa1250"),
                (2, "436f756e742d32", "8dc805680e3271a801790833ed74473710157645584f06d1b53ad439078d880b23e25256663178271c80ee8b7c"),
                (4, "436f756e742d34", "04c8f7aae1584b61aa5816382cb0b834a5d744f420e6dffb5ddcec633a21b8b3472820930c1ea9258b035937a2"),
                (255, "436f756e742d323535", "4a319462eaedee37248b4d985f64f4f863d31913fe9e30b6e13136053b69fe5d70853c84c60a84bb5495d5a678"),
                (256, "436f756e742d323536", "28e874512f8940fafc7d06135e7589f6b4198bc0f3a1c64702e72c9e6abaf9f05cb0d2f11b03a517898815c934"),
            ]
        ),
        Vector(
            name: "RFC 9180 A.6.3: DHKEM(P-521, HKDF-SHA512), HKDF-SHA512, AES-256-GCM, auth",
            suite: .p521SHA512AES256GCM,
            info: "4f6465206f6e2061204772656369616e2055726e",
            ikmE: "fe1c589c2a05893895a537f38c7cb4300b5a7e8fef3d6ccb8f07a498029c61e90262e009dc254c7f6235f9c6b2fd6aeff0a714db131b0"
                + "9258c16e217b7bd2aa619b0",
            skEm: "0185f03560de87bb2c543ef03607f3c33ac09980000de25eabe3b224312946330d2e65d192d3b4aa46ca92fc5ca50736b624402d95f6a"
                + "80dc04d1f10ae9517137261",
            pkEm: "04017de12ede7f72cb101dab36a111265c97b3654816dcd6183f809d4b3d111fe759497f8aefdc5dbb40d3e6d21db15bdc60f15f2a420"
                + "761bcaeef73b891c2b117e9cf01e29320b799bbc86afdc5ea97d941ea1c5bd5ebeeac7a784b3bab524746f3e640ec26ee1bd91255f93"
                + "30d974f845084637ee0e6fe9f505c5b87c86a4e1a6c3096dd",
            pkRm: "04007d419b8834e7513d0e7cc66424a136ec5e11395ab353da324e3586673ee73d53ab34f30a0b42a92d054d0db321b80f6217e655e30"
                + "4f72793767c4231785c4a4a6e008f31b93b7a4f2b8cd12e5fe5a0523dc71353c66cbdad51c86b9e0bdfcd9a45698f2dab1809ab1b0f8"
                + "8f54227232c858accc44d9a8d41775ac026341564a2d749f4",
            skSm: "001018584599625ff9953b9305849850d5e34bd789d4b81101139662fbea8b6508ddb9d019b0d692e737f66beae3f1f783e744202aaf6"
                + "fea01506c27287e359fe776",
            pkSm: "04015cc3636632ea9a3879e43240beae5d15a44fba819282fac26a19c989fafdd0f330b8521dff7dc393101b018c1e65b07be9f5fc9a2"
                + "8a1f450d6a541ee0d76221133001e8f0f6a05ab79f9b9bb9ccce142a453d59c5abebb5674839d935a3ca1a3fbc328539a60b3bc3c05f"
                + "ed22838584a726b9c176796cad0169ba4093332cbd2dc3a9f",
            sharedSecret: "26648fa2a2deb0bfc56349a590fd4cb7108a51797b634694fc02061e8d91b3576ac736a68bf848fe2a58dfb1956d266e6820"
                + "9a4d631e513badf8f4dcfc00f30a",
            keyScheduleContext: "0283a27c5b2358ab4dae1b2f5d8f57f10ccccc822a473326f543f239a70aee46347324e84e02d7651a10d08fb3dda739d2"
                + "2d50c53fbfa8122baacd0f9ae5913072ef45baa1f3a4b169e141feb957e48d03f28c837d8904c3d6775308c3d3faa75dd64adfa44e1"
                + "a1141edf9349959b8f8e5291cbdc56f62b0ed6527d692e85b09a4",
            key: "01fced239845e53f0ec616e71777883a1f9fcab22a50f701bdeee17ad040e44d",
            baseNonce: "9752b85fe8c73eda183f9e80",
            exporterSecret: "80466a9d9cc5112ddad297e817e038801e15fa18152bc4dc010a35d7f534089c87c98b4bacd7bbc6276c4002a74085adcd"
                + "9019fca6139826b5292569cfb7fe47",
            encryptions: [
                (0, "436f756e742d30", "0116aeb3a1c405c61b1ce47600b7ecd11d89b9c08c408b7e2d1e00a4d64696d12e6881dc61688209a8207427f9"),
                (1, "436f756e742d31", "37ece0cf6741f443e9d73b9966dc0b228499bb21fbf313948327231e70a18380e080529c0267f399ba7c539cc6"),
                (2, "436f756e742d32", "d17b045cac963e45d55fd3692ec17f100df66ac06d91f3b6af8efa7ed3c8895550eb753bc801fe4bd27005b4bd"),
                (4, "436f756e742d34", "50c523ae7c64cada96abea16ddf67a73d2914ec86a4cedb31a7e6257f7553ed244626ef79a57198192b2323384"),
                (255, "436f756e742d323535", "53d422295a6ce8fcc51e6f69e252e7195e64abf49252f347d8c25534f1865a6a17d949c65ce618ddc7d816111f"),
                (256, "436f756e742d323536", "0dfcfc22ea768880b4160fec27ab10c75fb27766c6bb97aed373a9b6eae35d31afb08257401075cbb602ac5abb"),
            ]
        ),
    ]

    @Test(arguments: vectors)
    func reproducesRFC9180AuthModeVector(_ vector: Vector) async throws {
        let hex = { (text: String) throws -> [UInt8] in try #require(Hex.decode(text)) }
        let suite = vector.suite
        // DeriveKeyPair(ikmE) gives the vector's skE: the same routine makes wrapped sender keys.
        let derived = try suite.derivePrivateKey(from: try hex(vector.ikmE)) { NISTCurveKey.isValid($0, suite) }
        #expect(derived == (try hex(vector.skEm)))

        let ephemeral = try NISTCurveKey(suite: suite, rawRepresentation: try hex(vector.skEm))
        let sender = try NISTCurveKey(suite: suite, rawRepresentation: try hex(vector.skSm))
        #expect(ephemeral.serializedPublicKey == (try hex(vector.pkEm)))
        #expect(sender.serializedPublicKey == (try hex(vector.pkSm)))

        var (enc, context) = try await HPKEAuthSender.setup(
            suite: suite, recipientKey: try hex(vector.pkRm), info: try hex(vector.info), senderKey: sender, ephemeralKey: ephemeral)
        #expect(enc == (try hex(vector.pkEm)))
        #expect(context.sharedSecret == (try hex(vector.sharedSecret)))
        #expect(context.keyScheduleContext == (try hex(vector.keyScheduleContext)))
        #expect(context.key == (try hex(vector.key)))
        #expect(context.baseNonce == (try hex(vector.baseNonce)))
        #expect(context.exporterSecret == (try hex(vector.exporterSecret)))

        let plaintext = try hex(Self.plaintext)
        var checked = 0
        for (sequenceNumber, aad, ciphertext) in vector.encryptions {
            // The vectors skip sequence numbers; sealing the skipped ones moves the context on.
            while context.sequenceNumber < sequenceNumber { _ = try context.seal(plaintext) }
            #expect(try context.seal(plaintext, additionalData: try hex(aad)) == (try hex(ciphertext)), "seq \(sequenceNumber)")
            checked += 1
        }
        #expect(checked == 6)
    }

    /// Apple's suite: swift-crypto's recipient (independent code: its own DHKEM and key schedule)
    /// opens what the sender sealed, with Apple's 73-byte `info` and the sender's public key.
    @Test func swiftCryptoRecipientOpensP384AuthModeSeal() async throws {
        let device = P384.KeyAgreement.PrivateKey()
        let merchant = P384.KeyAgreement.PrivateKey()
        let info = Array("ApplePayMerchantTokenUsageInformation_1.0".utf8) + Array(SHA256.hash(data: Array("DNITHE000000001".utf8)))
        #expect(info.count == 73)
        let plaintext = Array(#"{"webServiceURL":"https://pay.example","authenticationToken":"t"}"#.utf8)
        let sealed = try await HPKEAuthSender.seal(
            plaintext, recipientKey: Array(device.publicKey.x963Representation), info: info, senderKey: SoftwareP384SenderKey(merchant))
        #expect(sealed.encapsulatedKey.count == 97)
        #expect(sealed.ciphertext.count == plaintext.count + 16)

        var recipient = try HPKE.Recipient(
            privateKey: device, ciphersuite: .P384_SHA384_AES_GCM_256, info: Data(info), encapsulatedKey: Data(sealed.encapsulatedKey),
            authenticatedBy: merchant.publicKey)
        #expect(Array(try recipient.open(sealed.ciphertext)) == plaintext)

        // Another sender's public key, or other info, does not open it: auth mode binds both.
        var impostor = try HPKE.Recipient(
            privateKey: device, ciphersuite: .P384_SHA384_AES_GCM_256, info: Data(info), encapsulatedKey: Data(sealed.encapsulatedKey),
            authenticatedBy: P384.KeyAgreement.PrivateKey().publicKey)
        #expect(throws: (any Error).self) { try impostor.open(sealed.ciphertext) }
        var otherInfo = try HPKE.Recipient(
            privateKey: device, ciphersuite: .P384_SHA384_AES_GCM_256, info: Data(info.dropLast()),
            encapsulatedKey: Data(sealed.encapsulatedKey), authenticatedBy: merchant.publicKey)
        #expect(throws: (any Error).self) { try otherInfo.open(sealed.ciphertext) }
    }

    @Test func refusesARecipientKeyOffTheCurve() async throws {
        var point = Array(P384.KeyAgreement.PrivateKey().publicKey.x963Representation)
        point[96] ^= 0x01
        await #expect(throws: HPKEError.invalidRecipientKey) {
            _ = try await HPKEAuthSender.seal([1], recipientKey: point, info: [], senderKey: SoftwareP384SenderKey(.init()))
        }
        await #expect(throws: HPKEError.invalidRecipientKey) {
            _ = try await HPKEAuthSender.seal(
                [1], recipientKey: Array(point.prefix(96)), info: [], senderKey: SoftwareP384SenderKey(.init()))
        }
    }
}

/// A P-256 or P-521 key in memory, for the RFC's vectors (the product's keys are P-384).
private struct NISTCurveKey: HPKESenderKey, HPKEEphemeralKey {
    let suite: HPKESuite
    let rawRepresentation: [UInt8]
    let serializedPublicKey: [UInt8]

    init(suite: HPKESuite, rawRepresentation: [UInt8]) throws {
        self.suite = suite
        self.rawRepresentation = rawRepresentation
        switch suite.kemID {
        case 0x0010:
            serializedPublicKey = Array(try P256.KeyAgreement.PrivateKey(rawRepresentation: rawRepresentation).publicKey.x963Representation)
        default:
            serializedPublicKey = Array(try P521.KeyAgreement.PrivateKey(rawRepresentation: rawRepresentation).publicKey.x963Representation)
        }
    }

    static func isValid(_ scalar: [UInt8], _ suite: HPKESuite) -> Bool {
        (try? NISTCurveKey(suite: suite, rawRepresentation: scalar)) != nil
    }

    func sharedSecret(with peerPublicKey: [UInt8]) throws -> [UInt8] {
        let secret: SharedSecret
        switch suite.kemID {
        case 0x0010:
            secret = try P256.KeyAgreement.PrivateKey(rawRepresentation: rawRepresentation)
                .sharedSecretFromKeyAgreement(with: .init(x963Representation: peerPublicKey))
        default:
            secret = try P521.KeyAgreement.PrivateKey(rawRepresentation: rawRepresentation)
                .sharedSecretFromKeyAgreement(with: .init(x963Representation: peerPublicKey))
        }
        return secret.withUnsafeBytes { Array($0) }
    }

    func hashOfSharedSecret(with peerPublicKey: [UInt8], prefix: [UInt8], suite: HPKESuite) async throws -> [UInt8] {
        suite.digest(prefix + (try sharedSecret(with: peerPublicKey)))
    }
}
