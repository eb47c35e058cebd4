import Crypto
import Foundation
import PKCS11
import PaywardenSandbox
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Testing
import Vault
import _CryptoExtras

/// A module without ECDH (as p11-kit's 0.24 client or Google's kmsp11): the fault-injecting module
/// answers `CKR_MECHANISM_INVALID` to every `C_DeriveKey`, so the capability probe finds no ECDH
/// path. EC_v1 is refused for good (501 `hsm_capability_missing`, no Retry-After, the missing
/// mechanism and the remedy named), the service stays ready and says what it cannot decrypt, and
/// RSA_v1 decrypts.
@Suite(.serialized, .releasesTestResources)
struct HSMCapabilityGapTests {
    @Test func aTokenVersionTheHSMCannotDecryptIsRefusedForGoodWhileTheServiceStaysReady() async throws {
        let device = try FaultInjectingPKCS11.make()
        try device.fail("C_DeriveKey", with: .mechanismInvalid)
        try await withServer({ $0.hsm.modulePath = device.modulePath }) { server in
            #expect(try await server.waitForReadiness(200))
            #expect(server.server.hsm.capabilities.ecdhPath == nil)
            let ready = try await server.operations("/readyz")
            #expect(ready.status == 200 && ready.text.contains(#""cannotDecrypt":["EC_v1"]"#), "\(ready.text)")

            let token = try server.ecToken()
            let refused = try await server.send(body: token)
            #expect(refused.status == 501, "\(refused.text)")
            #expect(refused.errorCode == "hsm_capability_missing")
            #expect(refused.header("Retry-After") == nil)
            _ = DecryptEndpointTests.observed.withLock { $0.insert("501 hsm_capability_missing") }
            #expect(refused.text.contains("cannot decrypt EC_v1 tokens") && refused.text.contains("CKM_ECDH1_DERIVE"), "\(refused.text)")
            #expect(refused.text.contains("no retry helps") && refused.text.contains("PAYWARDEN_HSM_ALLOW_EXTRACTABLE_ECDH"))
            // Refused before its transaction id was claimed: the same token again is the same answer, not a replay.
            #expect(try await server.send(body: token).errorCode == "hsm_capability_missing")
            #expect(try device.calls("C_DeriveKey") > 0)

            #expect(try await server.operations("/readyz").status == 200, "a capability gap is not an outage")
            #expect(try await server.send(body: try server.rsaToken()).status == 200)
            let metrics = String(decoding: try await server.operations("/metrics").body, as: UTF8.self)
            #expect(metrics.contains(#"paywarden_hsm_token_version_decryptable{version="EC_v1"} 0"#), "\(metrics)")
            #expect(metrics.contains(#"paywarden_hsm_token_version_decryptable{version="RSA_v1"} 1"#))
            #expect(metrics.contains(#"outcome="hsm_capability_missing""#))
            #expect(server.logs.text.contains("this HSM cannot decrypt EC_v1 tokens"))
        }
    }

    /// A module without AES key wrap and AES-GCM (p11-kit's 0.24 client, tpm2-pkcs11): the vault can
    /// never protect data keys there. `hsm status` names what is missing, `paypages create` exits 3
    /// having made nothing, the vault's routes answer 501 `hsm_capability_missing` without
    /// Retry-After, `/readyz` stays ready and names `vault`, `/metrics` says 0, and decryption works.
    @Test func theVaultOnAnHSMThatCannotProtectDataKeysIsRefusedForGood() async throws {
        let refusals = [MechanismType.aesKeyWrapPad, .aesGCM].map { "mechanism=refused:\($0.rawValue)" }.joined(separator: "; ")
        let env = try await AdminTestEnvironment.make(backend: .softHSM)
        var withoutWrapping = FaultInjectingPKCS11.environment(faults: refusals)
        withoutWrapping["PAYWARDEN_PKCS11_MODULE"] = FaultInjectingPKCS11.builtLibrary
        let status = try env.paywarden("hsm", "status", environment: withoutWrapping)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(
            status.stdout.contains("vault:      cannot run: AES key wrap or AES-GCM for data keys: it wraps with neither"),
            "\(status.stdout)")
        #expect(status.stdout.contains("CKM_AES_KEY_WRAP_PAD") && status.stdout.contains("no retry helps"))
        let created = try env.paywarden(
            "paypages", "create", "--paypage-id", "gapPaypage", "--organization", "gap", "--merchant-id", "merchant.com.example.gap",
            environment: withoutWrapping)
        #expect(created.status == 3, "\(created.stderr)")
        #expect(
            created.stderr.contains("the vault cannot run on this HSM") && created.stderr.contains("no retry helps"), "\(created.stderr)")
        let vaultStatus = try env.paywarden("vault", "status", environment: withoutWrapping)
        #expect(vaultStatus.status == 0 && vaultStatus.stdout.contains("the vault cannot run on this HSM"), "\(vaultStatus.stdout)")
        #expect(!vaultStatus.stdout.contains("rotate-key"), "no advice to run a command that cannot succeed here")
        let secretKeys = try env.paywarden("hsm", "status", "--json")
        let report = try JSONSerialization.jsonObject(with: Data(secretKeys.stdout.utf8)) as? [String: Any]
        let vaultKeys = (report?["secretKeys"] as? [[String: Any]])?.filter {
            ($0["label"] as? String)?.hasPrefix("paywarden-vault/") == true
        }
        #expect(vaultKeys?.isEmpty == true, "no vault key was made: \(secretKeys.stdout)")
        let listed = try env.paywarden("paypages", "list", "--json")
        #expect(listed.status == 0 && !listed.stdout.contains("gapPaypage"), "no paypage was made: \(listed.stdout)")

        let device = try FaultInjectingPKCS11.make()
        try device.refuse(.aesKeyWrapPad)
        try device.refuse(.aesGCM)
        try await withServer({ $0.hsm.modulePath = device.modulePath }) { server in
            #expect(try await server.waitForReadiness(200))
            let ready = try await server.operations("/readyz")
            #expect(ready.status == 200 && ready.text.contains(#""cannotRun":["vault"]"#), "\(ready.text)")
            let registered = try await server.send(
                .POST, "/eProtect/paypage",
                body: try EProtectForms.form(token: try server.ecToken(), paypageID: TestServer.examplePaypage, reportGroup: "mobile"),
                apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
            #expect(registered.text.contains(#""paywardenCode":"hsm_capability_missing""#), "\(registered.text)")
            let someID = RegistrationID.generate().value
            let redeemed = try await server.send(.POST, "/v1/registrations/\(someID)/redeem", apiKey: server.vaultKey)
            #expect(redeemed.status == 501 && redeemed.errorCode == "hsm_capability_missing", "\(redeemed.text)")
            #expect(redeemed.header("Retry-After") == nil)
            #expect(redeemed.text.contains("CKM_AES_KEY_WRAP_PAD") && redeemed.text.contains("no retry helps"), "\(redeemed.text)")

            #expect(try await server.send(body: try server.ecToken()).status == 200, "decryption does not need the vault")
            #expect(try await server.operations("/readyz").status == 200, "a capability gap is not an outage")
            let metrics = try await server.operations("/metrics").text
            #expect(metrics.contains("paywarden_hsm_vault_usable 0"), "\(metrics)")
            #expect(server.logs.text.contains("the vault cannot run on this HSM"))
        }
    }

    /// `keys create` and `keys import` refuse a key this HSM could not use, before anything is
    /// made (exit status 3, what is missing named), and make it with a warning when asked to.
    @Test func keysTheHSMCannotUseAreRefusedUnlessAllowed() async throws {
        let env = try await AdminTestEnvironment.make(backend: .softHSM)
        var withoutECDH = FaultInjectingPKCS11.environment(faults: "C_DeriveKey=error:CKR_MECHANISM_INVALID")
        withoutECDH["PAYWARDEN_PKCS11_MODULE"] = FaultInjectingPKCS11.builtLibrary
        let merchant = "merchant.com.example.gap"

        let refused = try env.paywarden("keys", "create", "--merchant-id", merchant, "--type", "ec", environment: withoutECDH)
        #expect(refused.status == 3, "\(refused.stderr)")
        #expect(refused.stderr.contains("refused: this HSM cannot use an EC processing key"), "\(refused.stderr)")
        #expect(refused.stderr.contains("CKM_ECDH1_DERIVE") && refused.stderr.contains("nothing was made"))
        #expect(refused.stderr.contains("--allow-unusable"))
        let keyPath = try env.write(Array(P256.KeyAgreement.PrivateKey().pemRepresentation.utf8), named: "ec-key.pem")
        let importRefused = try env.paywarden("keys", "import", "--key", keyPath, "--merchant-id", merchant, environment: withoutECDH)
        #expect(importRefused.status == 3 && importRefused.stderr.contains("cannot use an EC processing key"), "\(importRefused.stderr)")
        #expect(try env.listedKeys().isEmpty, "nothing was recorded")
        #expect(try env.paywarden("keys", "list").stdout.contains("no merchant keys"), "nothing was made in the token either")

        // RSA processing keys are of use there; an EC key is made on request, with a warning.
        let rsa = try env.paywarden("keys", "create", "--merchant-id", merchant, "--type", "rsa", environment: withoutECDH)
        #expect(rsa.status == 0, "\(rsa.stderr)")
        #expect(!rsa.stderr.contains("warning"))
        let prepared = try env.paywarden(
            "keys", "create", "--merchant-id", merchant, "--type", "ec", "--allow-unusable", environment: withoutECDH)
        #expect(prepared.status == 0, "\(prepared.stderr)")
        #expect(prepared.stderr.contains("warning: this HSM cannot use an EC processing key yet"), "\(prepared.stderr)")
        #expect(try env.listedKeys().map(\.type).sorted() == ["ec", "rsa"])

        // Without signing, no identity key, and no new processing key either: a new key signs its
        // own CSR. An imported one comes with its certificate and only decrypts.
        var withoutSigning = FaultInjectingPKCS11.environment(faults: "C_SignInit=error:CKR_MECHANISM_INVALID")
        withoutSigning["PAYWARDEN_PKCS11_MODULE"] = FaultInjectingPKCS11.builtLibrary
        let identity = try env.paywarden(
            "keys", "create", "--merchant-id", merchant, "--purpose", "identity", "--type", "rsa", environment: withoutSigning)
        #expect(identity.status == 3, "\(identity.stderr)")
        #expect(identity.stderr.contains("cannot use an RSA identity key: the HSM cannot sign with RSA"), "\(identity.stderr)")
        let processing = try env.paywarden("keys", "create", "--merchant-id", merchant, "--type", "rsa", environment: withoutSigning)
        #expect(processing.status == 3, "\(processing.stderr)")
        #expect(
            processing.stderr.contains("cannot use an RSA processing key: its CSR cannot be signed: the HSM cannot sign with RSA"),
            "\(processing.stderr)")
        // The key could not be made at all, so the flag that prepares keys for an upgrade does not help.
        let forced = try env.paywarden(
            "keys", "create", "--merchant-id", merchant, "--type", "rsa", "--allow-unusable", environment: withoutSigning)
        #expect(forced.status == 3 && forced.stderr.contains("--allow-unusable cannot help"), "\(forced.stderr)")
        let rsaPath = try env.write(Array(try _RSA.Encryption.PrivateKey(keySize: .bits2048).pemRepresentation.utf8), named: "rsa.pem")
        let imported = try env.paywarden("keys", "import", "--key", rsaPath, "--merchant-id", merchant, environment: withoutSigning)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try env.listedKeys().count == 3)

        // The arguments are checked before the HSM is asked: Apple's rule, not the HSM's gap.
        let ecIdentity = try env.paywarden(
            "keys", "create", "--merchant-id", merchant, "--purpose", "identity", "--type", "ec", environment: withoutSigning)
        #expect(ecIdentity.status == 1, "\(ecIdentity.stderr)")
        #expect(ecIdentity.stderr.contains("Apple accepts only RSA-2048 for identity keys; use --type rsa"), "\(ecIdentity.stderr)")
    }

    /// A module that cannot import private keys answers with codes a failing device answers too:
    /// the refusal is permanent (misconfiguration) only when the HSM then passes its health check.
    @Test func anImportRefusalIsPermanentOnlyWhenTheHSMIsHealthy() async throws {
        let token = try await TestToken.make(backend: .softHSM)
        let device = try FaultInjectingPKCS11.make()
        let hsm = try await device.open(token)
        let software = try SoftwarePrivateKey(
            pemOrDER: Array(try _RSA.Encryption.PrivateKey(keySize: .bits2048).pemRepresentation.utf8))
        let specification = KeySpecification(label: "imported", algorithm: .rsa2048, usage: [.decrypt, .unwrap])
        try device.fail("C_CreateObject", with: .generalError)

        let refusal = await #expect(throws: PKCS11Error.self) { try await hsm.importPrivateKey(software, as: specification) }
        #expect(refusal?.category == .misconfiguration && refusal?.message.contains("it cannot import keys") == true, "\(refusal!)")

        try device.fail("C_GetTokenInfo", with: .deviceError)
        let outage = await #expect(throws: PKCS11Error.self) { try await hsm.importPrivateKey(software, as: specification) }
        #expect(outage?.category != .misconfiguration, "a failing HSM is not a missing capability: \(outage!)")
        #expect(outage?.function == "C_GetTokenInfo", "\(outage!)")
        device.clear()
        #expect(try await hsm.keys().isEmpty, "nothing was made")
    }

    /// A token that makes no secret key from a value (FIPS-mode HSMs may not) is probed with keys
    /// it generates, checked for consistency; one that makes none at all (tpm2-pkcs11 1.9) is a
    /// vault gap that says so, whatever mechanisms it lists.
    @Test func secretKeyPathsAreProbedWithGeneratedKeysWhereTheTokenMakesNoneFromAValue() async throws {
        let token = try await TestToken.make(backend: .softHSM)
        let generating = try FaultInjectingPKCS11.make()
        try generating.fail("C_CreateObject", with: .attributeValueInvalid)
        let hsm = try await generating.open(token)
        let capabilities = hsm.capabilities
        // RFC 5649 wrapping makes the data key an object from its value, so data keys are sealed with AES-GCM there.
        #expect(capabilities.aesGCM && capabilities.hmacSHA256 && capabilities.dataKeyWrapPath == .aesGCM, "\(capabilities.report)")
        #expect(capabilities.makesSecretKeys && hsm.dataProtectionGaps.isEmpty)
        #expect(
            capabilities.report.filter { $0.hasPrefix("secret probe keys:") } == [
                "secret probe keys: the token made no key from a value (CKR_ATTRIBUTE_VALUE_INVALID); probed with keys it generated, "
                    + "checked for consistency only"
            ], "\(capabilities.report)")
        let left = try await hsm.secretKeys()
        #expect(try await hsm.keys().isEmpty && left.isEmpty, "the probe's keys are gone")

        let none = try FaultInjectingPKCS11.make()
        try none.fail("C_CreateObject", with: .attributeValueInvalid)
        try none.fail("C_GenerateKey", with: .functionNotSupported)
        let withoutSecretKeys = try await none.open(token)
        #expect(!withoutSecretKeys.capabilities.makesSecretKeys && !withoutSecretKeys.capabilities.hmacSHA256)
        let gaps = withoutSecretKeys.dataProtectionGaps.map(\.description)
        #expect(gaps.count == 2 && gaps.allSatisfy { $0.contains("it makes no AES or generic secret key through PKCS#11") }, "\(gaps)")
        #expect(
            withoutSecretKeys.capabilities.report.contains(
                "HMAC-SHA256: unsupported (the token makes no generic secret key: from a value CKR_ATTRIBUTE_VALUE_INVALID, generated "
                    + "CKR_FUNCTION_NOT_SUPPORTED)"), "\(withoutSecretKeys.capabilities.report)")

        // A device failing at the probe is not an answer about keys: no fallback, nothing called permanent.
        let failing = try FaultInjectingPKCS11.make()
        try failing.fail("C_CreateObject", with: .deviceError)
        let probedInAFault = try await failing.open(token)
        #expect(probedInAFault.capabilities.makesSecretKeys, "\(probedInAFault.capabilities.report)")
        #expect(!probedInAFault.capabilities.report.contains { $0.contains("secret probe keys") || $0.contains("makes no") })
        #expect(probedInAFault.capabilities.report.contains("HMAC-SHA256: unsupported (CKR_DEVICE_ERROR)"))
    }

    /// A module that signs but does not hash (no `CKM_SHA256_RSA_PKCS`, as some tokens and TPMs):
    /// SHA-256 is computed in software and the DigestInfo signed with `CKM_RSA_PKCS`, the same
    /// signature byte for byte, since RSASSA-PKCS1-v1_5 is deterministic. Without `CKM_RSA_PKCS`
    /// either, RSA signing is a capability gap, named.
    @Test func rsaSignaturesAreHashedInSoftwareWhereTheModuleOnlySigns() async throws {
        let token = try await SoftHSMTestToken.make()
        let device = try FaultInjectingPKCS11.make()
        try device.refuse(.sha256RSAPKCS)
        let hsm = try await device.open(token)
        #expect(hsm.capabilities.rsaSigningPath == .softwareDigest, "\(hsm.capabilities.report)")
        #expect(hsm.capabilities.report.contains("RSA signing: sha256-rsa-pkcs: unsupported (CKR_MECHANISM_INVALID)"))
        let key = try await hsm.generateKeyPair(KeySpecification(label: "signer", algorithm: .rsa2048, usage: [.sign]))
        let message = Array("certification request info".utf8)
        let signature = try await hsm.signRSAPKCS1SHA256(key.id, message: message)
        let direct = try await token.open()
        #expect(direct.capabilities.rsaSigningPath == .hashAndSign)
        #expect(try await direct.signRSAPKCS1SHA256(key.id, message: message) == signature)
        guard case .rsa(let modulus, let exponent) = key.publicKey else {
            Issue.record("not an RSA key")
            return
        }
        #expect(
            try _RSA.Signing.PublicKey(n: modulus, e: exponent).isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: message, padding: .insecurePKCS1v1_5))

        let neither = try FaultInjectingPKCS11.make()
        try neither.refuse(.sha256RSAPKCS)
        try neither.refuse(.rsaPKCS)
        let unsigning = try await neither.open(token)
        #expect(unsigning.capabilities.rsaSigningPath == nil)
        await #expect(throws: PKCS11Error.self) { try await unsigning.signRSAPKCS1SHA256(key.id, message: message) }
        let refusals = try await unsigning.unusableReasons(of: .rsa2048, for: [.decryption, .signing])
        #expect(refusals[.decryption] == nil, "it decrypts")
        let reason = try #require(refusals[.signing])
        #expect(reason.contains("neither CKM_SHA256_RSA_PKCS nor CKM_RSA_PKCS"), "\(reason)")
    }
}
