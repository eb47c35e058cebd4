import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import PaywardenPrimitives
import Testing
import _CryptoExtras

extension HSMTests {
    @Suite struct KeyImport {
        /// Imports each vector's merchant key and checks the HSM derives Apple's real K from the
        /// token's ephemeral key (Z and K from intermediates.json).
        @Test(arguments: ["gala-2014", "gala-2021", "basistheory-ec-new", "basistheory-ec-old", "payu-sandbox-2018"])
        func importedVectorKeyDerivesApplesKey(vector: String) async throws {
            try #require(ConformanceVectors.available, "vectors absent")
            let pem = try ConformanceVectors.data(vector, "merchant_key.pem")
            let token = try ConformanceVectors.json(vector, "token.json")
            let intermediates = try ConformanceVectors.json(vector, "intermediates.json")
            let header = try #require(token["header"] as? [String: Any])
            let spki = try #require(Data(base64Encoded: header["ephemeralPublicKey"] as! String))
            let ephemeral = try P256.KeyAgreement.PublicKey(derRepresentation: spki)
            let expectedK = try #require(Data(base64Encoded: intermediates["symmetricKey_b64"] as! String))
            let merchantHash = try #require(Hex.decode(intermediates["merchantIdentifierHashHex"] as! String))
            let otherInfo = [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8) + Array(merchantHash)

            let hsm = try await TestToken.make().open()
            let software = try SoftwarePrivateKey(pemOrDER: Array(pem))
            #expect(software.algorithm == .ecP256)
            let key = try await hsm.importPrivateKey(software, as: KeySpecification(label: vector, algorithm: .ecP256, usage: [.derive]))
            #expect(key.isSensitive && !key.isExtractable)
            #expect(key.usage == [.derive])
            let k = try await hsm.deriveConcatenationKDFKey(key.id, peerPoint: Array(ephemeral.x963Representation), otherInfo: otherInfo)
            #expect(k == Array(expectedK))
            await hsm.close()
        }

        @Test func importedRSAVectorKeyDecrypts() async throws {
            try #require(ConformanceVectors.available, "vectors absent")
            let software = try SoftwarePrivateKey(pemOrDER: Array(ConformanceVectors.data("basistheory-rsa", "merchant_key.pem")))
            #expect(software.algorithm == .rsa2048)
            let token = try ConformanceVectors.json("basistheory-rsa", "token.json")
            let intermediates = try ConformanceVectors.json("basistheory-rsa", "intermediates.json")
            let wrapped = try #require(Data(base64Encoded: (token["header"] as! [String: Any])["wrappedKey"] as! String))
            let expected = try #require(Data(base64Encoded: intermediates["symmetricKey_b64"] as! String))
            let hsm = try await TestToken.make().open()
            let key = try await hsm.importPrivateKey(
                software, as: KeySpecification(label: "rsa", algorithm: .rsa2048, usage: [.decrypt, .unwrap]))
            #expect(try await hsm.decryptOAEPSHA256(key.id, ciphertext: Array(wrapped)) == Array(expected))
            #expect(expected.count == 16)
            await hsm.close()
        }

        @Test func softwareKeyFormatsAllImport() async throws {
            let ecKey = P256.KeyAgreement.PrivateKey()
            let rsaKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let formats: [(String, String)] = [
                ("PKCS#8 EC", ecKey.pemRepresentation),
                (
                    "SEC1 EC",
                    try P256.Signing.PrivateKey(rawRepresentation: ecKey.rawRepresentation).derRepresentation.pem("EC PRIVATE KEY")
                ),
                ("PKCS#1 RSA", rsaKey.pemRepresentation),
                ("PKCS#8 RSA", rsaKey.pkcs8PEMRepresentation),
            ]
            let hsm = try await TestToken.make().open()
            for (name, pem) in formats {
                let software = try SoftwarePrivateKey(pemOrDER: Array(pem.utf8))
                let usage: KeyUsage = software.algorithm == .ecP256 ? [.derive, .sign] : [.decrypt, .sign]
                let key = try await hsm.importPrivateKey(
                    software, as: KeySpecification(label: name, algorithm: software.algorithm, usage: usage))
                #expect(key.publicKey == (try software.publicKey()), "\(name)")
            }
            // The imported RSA key signs what the software key's public half verifies.
            let rsa = try await hsm.keys().first { $0.label == "PKCS#1 RSA" }!
            let signature = try await hsm.signRSAPKCS1SHA256(rsa.id, message: [1, 2, 3])
            #expect(
                rsaKey.publicKey.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: signature), for: [1, 2, 3], padding: .insecurePKCS1v1_5))
            await hsm.close()
        }

        @Test func legacyRC2PKCS12Imports() async throws {
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("p12-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: work) }
            let key = P256.Signing.PrivateKey()
            try key.pemRepresentation.write(to: work.appendingPathComponent("key.pem"), atomically: true, encoding: .utf8)
            try "secret-pass".write(to: work.appendingPathComponent("pass"), atomically: true, encoding: .utf8)
            // A self-signed certificate and a PKCS#12 with RC2-40 encryption, as old keychains export.
            try run(
                "/usr/bin/openssl",
                ["req", "-new", "-x509", "-key", "key.pem", "-subj", "/UID=merchant.test/CN=test", "-days", "30", "-out", "cert.pem"],
                in: work)
            try run(
                "/usr/bin/openssl",
                [
                    "pkcs12", "-export", "-legacy", "-certpbe", "PBE-SHA1-RC2-40", "-keypbe", "PBE-SHA1-RC2-40",
                    "-inkey", "key.pem", "-in", "cert.pem", "-passout", "file:pass", "-out", "legacy.p12",
                ], in: work)
            let p12 = try Data(contentsOf: work.appendingPathComponent("legacy.p12"))
            let wrong = #expect(throws: PKCS11Error.self) { try SoftwarePrivateKey(pkcs12: Array(p12), password: "nope") }
            #expect(wrong?.category == .badInput)
            let software = try SoftwarePrivateKey(pkcs12: Array(p12), password: "secret-pass")
            #expect(software.certificate != nil)
            #expect(try software.publicKey() == .ecP256(x963: Array(key.publicKey.x963Representation)))
            let hsm = try await TestToken.make().open()
            let imported = try await hsm.importPrivateKey(software, as: KeySpecification(label: "p12", algorithm: .ecP256, usage: [.sign]))
            let signature = try await hsm.signECDSA(imported.id, digest: Array(SHA256.hash(data: Data([42]))))
            #expect(key.publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: signature), for: Data([42])))
            await hsm.close()
        }

        @Test func unreadableKeysAreRefusedAsBadInput() throws {
            let error = #expect(throws: PKCS11Error.self) { try SoftwarePrivateKey(pemOrDER: Array("not a key".utf8)) }
            #expect(error?.category == .badInput)
            let p384 = P384.Signing.PrivateKey().pemRepresentation
            let curve = #expect(throws: PKCS11Error.self) { try SoftwarePrivateKey(pemOrDER: Array(p384.utf8)) }
            #expect(curve?.code == .unsupportedKey)
        }
    }
}

private func run(_ executable: String, _ arguments: [String], in directory: URL) throws {
    guard try ChildProcess.run(executable, arguments, directory: directory).status == 0 else { throw CocoaError(.executableLoad) }
}

extension Data {
    func pem(_ label: String) -> String {
        let body = base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(body)\n-----END \(label)-----\n"
    }
}
