import ApplePay
import Crypto
import Foundation
import KeyCustody
import PKCS11
import PaywardenPrimitives
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// Fresh tokens from the test forge and every way to break them. The protocol tests run on both key
/// backends (swift-crypto in memory and SoftHSM); what only an HSM does (custody states, an outage) on SoftHSM.
@Suite(.serialized, .releasesTestResources)
struct ForgedTokenTests {
    func expectRefusal(
        _ env: DecryptionTestEnvironment, _ token: [UInt8], _ code: PaymentTokenError.Code, _ message: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            _ = try await env.decrypter.decrypt(json: token)
            Issue.record("decrypted a token that should fail with \(code.rawValue)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            if let message { #expect(error.message.contains(message), "\(error.message)", sourceLocation: sourceLocation) }
        }
    }

    @Test(arguments: MerchantKeyBackend.allCases)
    func ecV1WithApplicationDataDecryptsExactly(backend: MerchantKeyBackend) async throws {
        let env = try await DecryptionTestEnvironment(backend)
        let merchant = try await env.merchant("merchant.com.example.ec")
        var options = TokenForge.Options()
        options.applicationData = Array(SHA256.hash(data: Data("order 42".utf8)))
        let payload = PaymentPayloads.threeDSecure()
        let token = try env.ecToken(to: merchant, payload: payload, options: options)
        let result = try await env.decrypter.decrypt(json: token)
        #expect(result.paymentData == payload)
        #expect(result.version == .ecV1)
        #expect(result.transactionID == Hex.encode(options.transactionID))
        #expect(result.publicKeyHash == merchant.publicKeyHash)
        #expect(result.keyID == merchant.keyID)
        #expect(result.merchantIdentifierHash == MerchantKeyStore.merchantIdentifierHash("merchant.com.example.ec"))
        #expect(abs(result.signingTime.timeIntervalSince(options.signingTime)) < 1)
        // A whole PKPaymentToken is accepted as well as its paymentData.
        var second = TokenForge.Options()
        second.applicationData = options.applicationData
        let inner = try JSONSerialization.jsonObject(with: Data(try env.ecToken(to: merchant, payload: payload, options: second)))
        let whole = try JSONSerialization.data(withJSONObject: [
            "paymentData": inner, "paymentMethod": ["displayName": "Visa 1111", "network": "Visa", "type": "debit"],
            "transactionIdentifier": "ABC",
        ])
        #expect(try await env.decrypter.decrypt(json: Array(whole)).paymentData == payload)
        await env.close()
    }

    @Test(arguments: MerchantKeyBackend.allCases)
    func emvAndMerchantTokenPayloadsSurviveByteForByte(backend: MerchantKeyBackend) async throws {
        let env = try await DecryptionTestEnvironment(backend)
        let merchant = try await env.merchant("merchant.com.example.payloads")
        for payload in [
            PaymentPayloads.emv(), PaymentPayloads.merchantToken(authenticationResponses: true), PaymentPayloads.threeDSecure(eci: nil),
        ] {
            let result = try await env.decrypter.decrypt(json: try env.ecToken(to: merchant, payload: payload))
            #expect(result.paymentData == payload)
        }
        let maskedJSON = try #require(PaymentDataMasking.masked(PaymentPayloads.merchantToken(authenticationResponses: true)))
        let masked = try #require(try JSONSerialization.jsonObject(with: Data(maskedJSON)) as? [String: Any])
        #expect(masked["applicationPrimaryAccountNumber"] as? String == "************1488")
        #expect(masked["futureField"] != nil)
        let responses = try #require(masked["authenticationResponses"] as? [[String: Any]])
        #expect(responses.allSatisfy { ($0["authenticationData"] as? String)?.hasPrefix("<masked") == true })
        #expect(responses.first?["transactionAmount"] as? String == "1250")
        await env.close()
    }

    @Test(arguments: MerchantKeyBackend.allCases)
    func rsaV1DecryptsExactly(backend: MerchantKeyBackend) async throws {
        let env = try await DecryptionTestEnvironment(backend)
        let merchant = try await env.merchant("merchant.cn.example", type: .rsa)
        let payload = PaymentPayloads.emv()
        let result = try await env.decrypter.decrypt(json: try env.rsaToken(to: merchant, payload: payload))
        #expect(result.paymentData == payload)
        #expect(result.version == .rsaV1)
        // An RSA_v1 token signed by an EC leaf is not Apple's.
        var options = TokenForge.Options()
        options.leaf = env.forge.pki.ecLeaf
        await expectRefusal(env, try env.rsaToken(to: merchant, options: options), .signatureInvalid, "Apple never does that")
        // A flipped bit in the wrapped key breaks the signature first.
        await expectRefusal(
            env, try env.rsaToken(to: merchant).flippingByte(of: "wrappedKey", inHeader: true), .signatureInvalid, "messageDigest")
        await env.close()
    }

    @Test(arguments: MerchantKeyBackend.allCases)
    func replayInsideTheWindowIsRefused(backend: MerchantKeyBackend) async throws {
        let env = try await DecryptionTestEnvironment(backend)
        let merchant = try await env.merchant("merchant.replay")
        let token = try env.ecToken(to: merchant)
        _ = try await env.decrypter.decrypt(json: token)
        await expectRefusal(env, token, .replayedTransaction, "was already decrypted")
        // Another token with the same transaction id, freshly signed, is a replay as well.
        var options = TokenForge.Options()
        options.transactionID = try #require(Hex.decode(try PaymentToken(json: token).transactionIDHex))
        await expectRefusal(env, try env.ecToken(to: merchant, options: options), .replayedTransaction)
        await env.close()
    }

    @Test(arguments: MerchantKeyBackend.allCases)
    func staleAndFutureSigningTimes(backend: MerchantKeyBackend) async throws {
        let env = try await DecryptionTestEnvironment(backend)
        let merchant = try await env.merchant("merchant.time")
        // Times are set from the decrypter's clock, which stands still: counting from the real one,
        // the second the HSM's setup can take would bring a token 301 s old inside the window.
        let now = env.clock
        var stale = TokenForge.Options()
        stale.signingTime = now.addingTimeInterval(-301)
        await expectRefusal(env, try env.ecToken(to: merchant, options: stale), .signingTimeOutOfWindow, "ago")
        var future = TokenForge.Options()
        future.signingTime = now.addingTimeInterval(301)
        await expectRefusal(env, try env.ecToken(to: merchant, options: future), .signingTimeOutOfWindow, "in the future")
        // Inside the window on either side, both pass; the injected clock moves "now".
        var early = TokenForge.Options()
        early.signingTime = now.addingTimeInterval(-290)
        _ = try await env.decrypter.decrypt(json: try env.ecToken(to: merchant, options: early))
        env.clock = now.addingTimeInterval(600)
        var late = TokenForge.Options()
        late.signingTime = now.addingTimeInterval(400)
        _ = try await env.decrypter.decrypt(json: try env.ecToken(to: merchant, options: late))
        await env.close()
    }

    @Test(arguments: MerchantKeyBackend.allCases)
    func wrongLeafAndIntermediateMarkersAndForeignRoots(backend: MerchantKeyBackend) async throws {
        // One token open at a time (NSS softokn opens one database per process): the trusted
        // root is read, and the first environment closed, before the others open.
        let env = try await DecryptionTestEnvironment(backend)
        let trustedRoot = env.forge.pki.root
        await env.close()
        let unmarkedLeaves = TokenForge(pki: try ApplePayTestPKI(name: "NoLeafOID", markLeaves: false, rsaLeaf: false))
        let unmarkedIntermediate = TokenForge(pki: try ApplePayTestPKI(name: "NoIntermediateOID", markIntermediate: false, rsaLeaf: false))
        for (forge, message) in [(unmarkedLeaves, "1.2.840.113635.100.6.29"), (unmarkedIntermediate, "1.2.840.113635.100.6.2.14")] {
            let checking = try await DecryptionTestEnvironment(backend, pki: forge.pki)
            let key = try await checking.merchant("merchant.chain")
            await expectRefusal(checking, try checking.ecToken(to: key), .certificateChainInvalid, message)
            await checking.close()
        }
        // A well-formed chain to a root that is not trusted.
        let otherRoot = try await DecryptionTestEnvironment(
            backend, pki: try ApplePayTestPKI(name: "Impostor", rsaLeaf: false),
            trusting: TrustAnchors(certificates: [trustedRoot], source: "test root"))
        let key = try await otherRoot.merchant("merchant.chain")
        await expectRefusal(otherRoot, try otherRoot.ecToken(to: key), .certificateChainInvalid, "does not end in a trusted root")
        await otherRoot.close()
    }

    @Test(arguments: MerchantKeyBackend.allCases)
    func everyTamperedByteIsCaught(backend: MerchantKeyBackend) async throws {
        let env = try await DecryptionTestEnvironment(backend)
        let merchant = try await env.merchant("merchant.tamper")
        var options = TokenForge.Options()
        options.applicationData = [UInt8](repeating: 0xAB, count: 32)
        func fresh() throws -> [UInt8] {
            var fresh = TokenForge.Options()
            fresh.applicationData = options.applicationData
            return try env.ecToken(to: merchant, options: fresh)
        }
        await expectRefusal(env, try fresh().flippingByte(of: "data"), .signatureInvalid, "messageDigest")
        await expectRefusal(env, try fresh().flippingByte(of: "data", at: 0), .signatureInvalid)
        await expectRefusal(env, try fresh().flippingByte(of: "ephemeralPublicKey", inHeader: true, at: 80), .signatureInvalid)
        await expectRefusal(
            env,
            try fresh().editingToken { token in
                var header = token["header"] as! [String: Any]
                header["transactionId"] = String(repeating: "0", count: 64)
                token["header"] = header
            }, .signatureInvalid, "messageDigest")
        await expectRefusal(
            env,
            try fresh().editingToken { token in
                var header = token["header"] as! [String: Any]
                header.removeValue(forKey: "applicationData")
                token["header"] = header
            }, .signatureInvalid)
        // The signature value (near its end) and the signed attributes (near the middle).
        let signatureLength = try #require(
            Data(base64Encoded: (try JSONSerialization.jsonObject(with: Data(fresh())) as! [String: Any])["signature"] as! String)
        ).count
        await expectRefusal(env, try fresh().flippingByte(of: "signature", at: signatureLength - 10), .signatureInvalid)
        await expectRefusal(env, try fresh().flippingByte(of: "signature", at: signatureLength - 100), .signatureInvalid)
        // A certificate byte: the chain no longer verifies (or no longer parses).
        let damaged = try fresh().flippingByte(of: "signature", at: 400)
        do {
            _ = try await env.decrypter.decrypt(json: damaged)
            Issue.record("decrypted a token with a damaged certificate")
        } catch {
            #expect([PaymentTokenError.Code.certificateChainInvalid, .signatureInvalid].contains(error.code))
        }
        // publicKeyHash is not signed: changing it selects no key.
        await expectRefusal(
            env, try fresh().withPublicKeyHash(Data(repeating: 7, count: 32).base64EncodedString()), .unknownPublicKeyHash,
            "was the token encrypted to a merchant identity certificate")
        // The signed content joins its fields without lengths: re-splitting transactionId and
        // applicationData keeps the signature valid, so both must have their fixed sizes.
        let genuine = try fresh()
        let header = (try JSONSerialization.jsonObject(with: Data(genuine)) as! [String: Any])["header"] as! [String: Any]
        let transactionID = header["transactionId"] as! String
        let applicationData = header["applicationData"] as! String
        for split in [16, 40] {
            let joined = transactionID + applicationData
            let resplit = try genuine.editingToken { token in
                var header = token["header"] as! [String: Any]
                header["transactionId"] = String(joined.prefix(split * 2))
                header["applicationData"] = String(joined.dropFirst(split * 2))
                token["header"] = header
            }
            await expectRefusal(env, resplit, .malformedToken)
        }
        // Two signers.
        var two = TokenForge.Options()
        two.twoSigners = true
        await expectRefusal(env, try env.ecToken(to: merchant, options: two), .signatureInvalid, "2 signers")
        await env.close()
    }

    @Test(arguments: MerchantKeyBackend.allCases)
    func offCurveAndWrongCurveEphemeralKeys(backend: MerchantKeyBackend) async throws {
        let env = try await DecryptionTestEnvironment(backend)
        let merchant = try await env.merchant("merchant.curves")
        var offCurve = Array(P256.KeyAgreement.PrivateKey().publicKey.derRepresentation)
        offCurve[offCurve.count - 1] ^= 0x01
        var options = TokenForge.Options()
        options.ephemeralPublicKeyOverride = offCurve  // signed, so only the curve check can catch it
        await expectRefusal(env, try env.ecToken(to: merchant, options: options), .decryptionFailed, "not a valid P-256 public key")
        var wrongCurve = TokenForge.Options()
        wrongCurve.ephemeralPublicKeyOverride = Array(P384.KeyAgreement.PrivateKey().publicKey.derRepresentation)
        await expectRefusal(env, try env.ecToken(to: merchant, options: wrongCurve), .decryptionFailed, "not a valid P-256 public key")
        await env.close()
    }

    @Test(arguments: MerchantKeyBackend.allCases)
    func malformedTruncatedAndOversizedInput(backend: MerchantKeyBackend) async throws {
        let env = try await DecryptionTestEnvironment(backend)
        let merchant = try await env.merchant("merchant.malformed")
        let token = try env.ecToken(to: merchant)
        await expectRefusal(env, Array(token.prefix(token.count / 2)), .malformedToken, "not a JSON object")
        await expectRefusal(env, [UInt8](repeating: 0x20, count: PaymentToken.maximumEncodedSize + 1), .malformedToken, "at most")
        await expectRefusal(env, try token.editingToken { $0["version"] = "EC_v2" }, .unsupportedVersion, "EC_v2")
        await expectRefusal(env, try token.editingToken { $0["data"] = "not base64!" }, .malformedToken, "data is not valid Base64")
        await expectRefusal(env, try token.editingToken { $0["header"] = "x" }, .malformedToken, "header")
        await expectRefusal(
            env,
            try token.editingToken { token in
                var header = token["header"] as! [String: Any]
                header["transactionId"] = "xyz"
                token["header"] = header
            }, .malformedToken, "transactionId")
        await expectRefusal(
            env, try token.editingToken { $0["signature"] = Data([0x30, 0x80, 0x06]).base64EncodedString() }, .signatureInvalid,
            "not a detached CMS")
        await expectRefusal(env, try token.editingToken { $0.removeValue(forKey: "signature") }, .malformedToken, "signature is missing")
        await env.close()
    }

    @Test func retiredKeysDecryptAndDestroyedKeysAreUnknown() async throws {
        let env = try await DecryptionTestEnvironment()
        let merchant = try await env.merchant("merchant.lifecycle")
        _ = try await env.hsm.store.retire(merchant.keyID)
        try await env.hsm.keys.reload(from: env.hsm.store)
        _ = try await env.decrypter.decrypt(json: try env.ecToken(to: merchant))
        _ = try await env.hsm.store.destroy(merchant.keyID)
        try await env.hsm.keys.reload(from: env.hsm.store)
        await expectRefusal(env, try env.ecToken(to: merchant), .unknownPublicKeyHash)
        await env.close()
    }

    @Test func anUnavailableHSMGivesTheTransactionBack() async throws {
        let env = try await DecryptionTestEnvironment()
        let merchant = try await env.merchant("merchant.outage")
        let token = try env.ecToken(to: merchant)
        await env.hsm.hsm.close()  // the pool refuses work from now on, as a lost HSM would
        await expectRefusal(env, token, .hsmUnavailable)
        #expect(env.replayCache.count == 0, "the transaction id was given back for a retry")
    }
}
