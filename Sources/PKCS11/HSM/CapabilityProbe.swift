import CPKCS11
import Crypto
import _CryptoExtras
import Foundation

/// Finds the strongest ECDH and RSA-OAEP paths the token really supports by running each one on
/// throw-away session keys and checking the result against software. A module that accepts a
/// mechanism but computes something else (a different KDF ordering, say) is not trusted.
enum CapabilityProbe {
    static func run(session: Session, mechanisms: Set<MechanismType>, configuration: HSMConfiguration) -> Capabilities {
        var report: [String] = []
        let ecdh = probeECDH(session: session, mechanisms: mechanisms, configuration: configuration, report: &report)
        let rsa = probeRSA(session: session, mechanisms: mechanisms, configuration: configuration, report: &report)
        return Capabilities(ecdhPath: ecdh, rsaDecryptionPath: rsa, mechanisms: mechanisms, report: report)
    }

    private static func probeECDH(
        session: Session, mechanisms: Set<MechanismType>, configuration: HSMConfiguration, report: inout [String]
    ) -> ECDHPath? {
        guard mechanisms.contains(.ecdh1Derive), mechanisms.contains(.ecKeyPairGeneration) else {
            report.append("ECDH: the token lists no CKM_ECDH1_DERIVE; EC_v1 keys cannot be used")
            return nil
        }
        do {
            let (publicHandle, privateHandle) = try session.generateKeyPair(
                .ecKeyPairGeneration,
                publicKey: [.bool(.token, false), Attribute(.ecParams, bytes: KeyAlgorithm.p256Parameters)],
                privateKey: [.bool(.token, false), .bool(.sensitive, true), .bool(.extractable, false), .bool(.derive, true)]
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
            let otherInfo = Array("paywarden capability probe".utf8)
            var hash = SHA256()
            hash.update(data: [0, 0, 0, 1])
            z.withUnsafeBytes { hash.update(bufferPointer: $0) }
            hash.update(data: otherInfo)
            let expected = Array(hash.finalize())

            for path in ECDHPath.allCases {
                if path == .extractableSecret && !configuration.allowExtractableSharedSecret {
                    report.append("ECDH: \(path): not allowed (PAYWARDEN_HSM_ALLOW_EXTRACTABLE_ECDH is off)")
                    continue
                }
                do {
                    let key = try session.deriveConcatenationKDFKey(
                        path: path, privateKey: privateHandle,
                        peerPoint: Array(ephemeral.publicKey.x963Representation), otherInfo: otherInfo
                    )
                    if key == expected {
                        report.append("ECDH: \(path): in use")
                        return path
                    }
                    report.append("ECDH: \(path): unsupported (the token's result differs from SP 800-56A)")
                } catch {
                    report.append("ECDH: \(path): unsupported (\(error.returnValue?.name ?? error.message))")
                }
            }
        } catch {
            report.append("ECDH: probe failed: \(error)")
        }
        return nil
    }

    private static func probeRSA(
        session: Session, mechanisms: Set<MechanismType>, configuration: HSMConfiguration, report: inout [String]
    ) -> RSADecryptionPath? {
        guard mechanisms.contains(.rsaKeyPairGeneration) else {
            report.append("RSA: the token cannot generate RSA keys; RSA_v1 is unavailable")
            return nil
        }
        do {
            let (publicHandle, privateHandle) = try session.generateKeyPair(
                .rsaKeyPairGeneration,
                publicKey: [.bool(.token, false), .ulong(.modulusBits, 2048), Attribute(.publicExponent, bytes: [1, 0, 1]),
                            .bool(.encrypt, true), .bool(.wrap, true)],
                privateKey: [.bool(.token, false), .bool(.sensitive, true), .bool(.extractable, false),
                             .bool(.decrypt, true), .bool(.unwrap, true)]
            )
            defer {
                try? session.destroyObject(privateHandle)
                try? session.destroyObject(publicHandle)
            }
            guard case .rsa(let modulus, let exponent) = try PublicKey(
                keyType: .rsa, attributes: session.attributes(of: publicHandle, [.modulus, .publicExponent])
            ) else { return nil }
            let secret = Array(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) })
            let ciphertext = Array(try _RSA.Encryption.PublicKey(n: modulus, e: exponent)
                .encrypt(secret, padding: .PKCS1_OAEP_SHA256))

            for path in RSADecryptionPath.allCases {
                if path == .rawWithSoftwareOAEP && !configuration.allowSoftwareOAEPDecoding {
                    report.append("RSA: \(path): not allowed (PAYWARDEN_HSM_ALLOW_SOFTWARE_OAEP is off)")
                    continue
                }
                do {
                    let plaintext = try session.decryptOAEPSHA256(
                        path: path, privateKey: privateHandle, ciphertext: ciphertext, modulusLength: modulus.count
                    )
                    if plaintext == secret {
                        report.append("RSA: \(path): in use")
                        return path
                    }
                    report.append("RSA: \(path): unsupported (wrong plaintext)")
                } catch {
                    report.append("RSA: \(path): unsupported (\(error.returnValue?.name ?? error.message))")
                }
            }
        } catch {
            report.append("RSA: probe failed: \(error)")
        }
        return nil
    }
}
