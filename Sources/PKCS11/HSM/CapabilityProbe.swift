import Crypto
import Foundation
import _CryptoExtras

/// Finds the strongest paths the token really supports (ECDH, RSA-OAEP, RSA-PSS, AES-GCM, data-key
/// wrapping, HMAC) by running each one on throw-away session keys and checking the result against
/// software. A module that accepts a mechanism but computes something else (a different KDF
/// ordering, say) is not trusted.
enum CapabilityProbe {
    static func run(session: Session, mechanisms: Set<MechanismType>, configuration: HSMConfiguration) -> Capabilities {
        var report: [String] = []
        let ecdh = probeECDH(session: session, mechanisms: mechanisms, configuration: configuration, report: &report)
        let (rsa, pss, rsaSigning) = probeRSA(session: session, mechanisms: mechanisms, configuration: configuration, report: &report)
        let aesGCM = probeAESGCM(session: session, report: &report)
        let wrap = probeDataKeyWrap(session: session, aesGCM: aesGCM, report: &report)
        let hmac = probeHMAC(session: session, report: &report)
        let unknown = probeOptionalAttributes(session: session, report: &report)
        let p384 = probeP384ECDH(session: session, configuration: configuration, report: &report)
        return Capabilities(
            ecdhPath: ecdh, rsaDecryptionPath: rsa, dataKeyWrapPath: wrap, aesGCM: aesGCM, hmacSHA256: hmac, rsaPSS: pss,
            rsaSigningPath: rsaSigning, unknownAttributes: unknown, mechanisms: mechanisms, report: report, p384ECDHPath: p384,
            // Only when both kinds were refused both ways: one kind missing is that operation's own gap.
            makesSecretKeys:
                !(["AES-GCM", "HMAC-SHA256"].allSatisfy { name in
                    report.contains { $0.hasPrefix("\(name): unsupported (\(makesNoSecretKey) ") }
                })
        )
    }

    static func probeECDH(
        session: Session, mechanisms: Set<MechanismType>, configuration: HSMConfiguration, report: inout [String]
    ) -> ECDHPath? {
        // A mechanism list is a claim, not a fact: what is missing from it is tried all the same.
        if !mechanisms.contains(.ecdh1Derive) || !mechanisms.contains(.ecKeyPairGeneration) {
            report.append("ECDH: the token does not list CKM_ECDH1_DERIVE and CKM_EC_KEY_PAIR_GEN; probed all the same")
        }
        do {
            let (publicHandle, privateHandle) = try throwAwayKeyPair(
                session, .ecKeyPairGeneration, report: &report,
                publicKey: [Attribute(.ecParams, bytes: KeyAlgorithm.p256Parameters)],
                privateKey: [.bool(.sensitive, true), .bool(.extractable, false), .bool(.derive, true)]
            )
            defer {
                try? session.destroyObject(privateHandle)
                try? session.destroyObject(publicHandle)
            }
            guard case .ecP256(let point) = try PublicKey(keyType: .ec, attributes: session.attributes(of: publicHandle, [.ecPoint])) else {
                return nil
            }
            let ephemeral = P256.KeyAgreement.PrivateKey()
            let z = try ephemeral.sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(x963Representation: point))
            let otherInfo = Array("capability probe".utf8)
            var hash = SHA256()
            hash.update(data: [0, 0, 0, 1])
            z.withUnsafeBytes { hash.update(bufferPointer: $0) }
            hash.update(data: otherInfo)
            let expected = Array(hash.finalize())

            let extractableRefused = !configuration.allowExtractableSharedSecret
            return firstWorking(
                "ECDH", report: &report,
                refusal: { path in path == .extractableSecret && extractableRefused ? "extractable shared secrets are off" : nil }
            ) { (path: ECDHPath) in
                let key = try session.deriveConcatenationKDFKey(
                    path: path, privateKey: privateHandle, peerPoint: Array(ephemeral.publicKey.x963Representation), otherInfo: otherInfo
                )
                return key == expected ? nil : "the token's result differs from SP 800-56A"
            }
        } catch {
            report.append("ECDH: probe failed: \(reason(error)); EC_v1 keys cannot be used")
        }
        return nil
    }

    static func probeRSA(
        session: Session, mechanisms: Set<MechanismType>, configuration: HSMConfiguration, report: inout [String]
    ) -> (RSADecryptionPath?, pss: Bool, signing: RSASigningPath?) {
        if !mechanisms.contains(.rsaKeyPairGeneration) {
            report.append("RSA: the token does not list CKM_RSA_PKCS_KEY_PAIR_GEN; probed all the same")
        }
        do {
            let (publicHandle, privateHandle) = try throwAwayKeyPair(
                session, .rsaKeyPairGeneration, report: &report,
                publicKey: [
                    .ulong(.modulusBits, 2048), Attribute(.publicExponent, bytes: [1, 0, 1]),
                    .bool(.encrypt, true), .bool(.wrap, true), .bool(.verify, true),
                ],
                privateKey: [
                    .bool(.sensitive, true), .bool(.extractable, false), .bool(.decrypt, true), .bool(.unwrap, true), .bool(.sign, true),
                ]
            )
            defer {
                try? session.destroyObject(privateHandle)
                try? session.destroyObject(publicHandle)
            }
            guard
                case .rsa(let modulus, let exponent) = try PublicKey(
                    keyType: .rsa, attributes: session.attributes(of: publicHandle, [.modulus, .publicExponent])
                )
            else { return (nil, false, nil) }
            let pss = probePSS(session: session, privateKey: privateHandle, modulus: modulus, exponent: exponent, report: &report)
            let signing = probeRSASigningPath(
                session: session, privateKey: privateHandle, modulus: modulus, exponent: exponent, report: &report)
            let secret = Array(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) })
            let ciphertext = Array(
                try _RSA.Encryption.PublicKey(n: modulus, e: exponent)
                    .encrypt(secret, padding: .PKCS1_OAEP_SHA256))

            let softwareOAEPRefused = !configuration.allowSoftwareOAEPDecoding
            let path = firstWorking(
                "RSA", report: &report,
                refusal: { path in path == .rawWithSoftwareOAEP && softwareOAEPRefused ? "software OAEP decoding is off" : nil }
            ) { (path: RSADecryptionPath) in
                let plaintext = try session.decryptOAEPSHA256(
                    path: path, privateKey: privateHandle, ciphertext: ciphertext, modulusLength: modulus.count
                )
                return plaintext == secret ? nil : "wrong plaintext"
            }
            return (path, pss, signing)
        } catch {
            report.append("RSA: probe failed: \(reason(error)); RSA_v1 and RSA signing are unavailable")
        }
        return (nil, false, nil)
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256, hashed in the HSM or, where the module lacks
    /// `CKM_SHA256_RSA_PKCS`, in software with `CKM_RSA_PKCS` over the DigestInfo: the first whose
    /// signature verifies in software.
    static func probeRSASigningPath(
        session: Session, privateKey: ObjectHandle, modulus: [UInt8], exponent: [UInt8], report: inout [String]
    ) -> RSASigningPath? {
        let message = Array("capability probe: RSA signing".utf8)
        return firstWorking("RSA signing", report: &report, refusal: { _ in nil }) { (path: RSASigningPath) in
            let signature = try session.signRSAPKCS1SHA256(path: path, privateKey: privateKey, message: message)
            let key = try _RSA.Signing.PublicKey(n: modulus, e: exponent)
            let valid = key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: message, padding: .insecurePKCS1v1_5)
            return valid ? nil : "the token's signature does not verify"
        }
    }

    /// RSASSA-PSS (SHA-256, MGF1-SHA-256, 32-byte salt): randomised, so the token's signature is
    /// checked by verifying it in software.
    private static func probePSS(
        session: Session, privateKey: ObjectHandle, modulus: [UInt8], exponent: [UInt8], report: inout [String]
    ) -> Bool {
        let message = Array("capability probe: RSA-PSS".utf8)
        return attempt(
            "RSA-PSS", report: &report, inUse: "in use (TLS 1.3 client authentication possible)",
            consequence: "; TLS client authentication is limited to TLS 1.2"
        ) {
            let signature = try session.signRSAPSSSHA256(privateKey: privateKey, message: message)
            let key = try _RSA.Signing.PublicKey(n: modulus, e: exponent)
            let valid = key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: message, padding: .PSS)
            return valid ? nil : "the token's signature does not verify"
        }
    }

    /// A key pair for one probe, which the caller destroys: session objects, or token objects on a
    /// module that refuses session objects (tpm2-pkcs11), which the report says.
    static func throwAwayKeyPair(
        _ session: Session, _ mechanism: Mechanism, report: inout [String], publicKey: [Attribute], privateKey: [Attribute]
    ) throws(PKCS11Error) -> (publicKey: ObjectHandle, privateKey: ObjectHandle) {
        let label = Attribute.label("paywarden-capability-probe")
        do {
            return try session.generateKeyPair(
                mechanism, publicKey: [.bool(.token, false), label] + publicKey, privateKey: [.bool(.token, false), label] + privateKey)
        } catch  where refusesSessionObject(error) {
            // Only a refusal of the template: a device fault must not leave keys in the token.
            let pair = try session.generateKeyPair(
                mechanism, publicKey: [.bool(.token, true), label] + publicKey, privateKey: [.bool(.token, true), label] + privateKey)
            report.append(
                "probe keys: the token refused session objects (\(reason(error))); probed with token objects, destroyed afterwards")
            return pair
        }
    }

    /// Whether a throw-away key's generation was refused for its template (`CKA_TOKEN=FALSE`, on a
    /// module without session objects), so that a token object is worth trying: not for a fault.
    static func refusesSessionObject(_ error: PKCS11Error) -> Bool {
        [.attributeValueInvalid, .templateInconsistent, .attributeTypeInvalid].contains(error.returnValue)
    }

    /// A ladder: the first path, strongest first, that the configuration allows (`refusal` says why
    /// not) and whose answer matches software's.
    static func firstWorking<Path: CaseIterable & CustomStringConvertible>(
        _ name: String, report: inout [String], refusal: (Path) -> String?, _ check: (Path) throws -> String?
    ) -> Path? {
        for path in Path.allCases {
            if let refusal = refusal(path) {
                report.append("\(name): \(path): not allowed by the configuration (\(refusal))")
                continue
            }
            if attempt("\(name): \(path)", report: &report, { try check(path) }) { return path }
        }
        return nil
    }

    /// One probe: `check` runs the token's operation and compares the answer with software's,
    /// returning nil when they agree or why they do not. Reports `NAME: in use` or
    /// `NAME: unsupported (WHY)`; a thrown error is a reason too.
    static func attempt(
        _ name: String, report: inout [String], inUse: String = "in use", consequence: String = "", _ check: () throws -> String?
    ) -> Bool {
        let mismatch: String?
        do {
            mismatch = try check()
        } catch {
            mismatch = reason(error)
        }
        if let mismatch {
            report.append("\(name): unsupported (\(mismatch))\(consequence)")
            return false
        }
        report.append("\(name): \(inUse)")
        return true
    }

    static func reason(_ error: any Error) -> String {
        guard let error = error as? PKCS11Error else { return "\(error)" }
        return error.returnValue?.name ?? error.message
    }
}
