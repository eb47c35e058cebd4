import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import PaywardenPrimitives
import Testing
import _CryptoExtras

/// K = SHA-256(00000001 ‖ Z ‖ otherInfo), computed entirely in software.
func softwareConcatenationKDF(_ z: SharedSecret, _ otherInfo: [UInt8]) -> [UInt8] {
    var hash = SHA256()
    hash.update(data: [0, 0, 0, 1])
    z.withUnsafeBytes { hash.update(bufferPointer: $0) }
    hash.update(data: otherInfo)
    return Array(hash.finalize())
}

extension HSMTests {
    @Suite struct KeyAgreement {
        /// Neither SoftHSM nor NSS softokn has Apple's KDF in the HSM (NSS's `CKD_SHA256_KDF` is
        /// ANSI X9.63, a different key): both derive Z sensitive and digest it with `C_DigestKey`.
        @Test func theDigestKeyPathMatchesSoftwareECDH() async throws {
            let token = try await TestToken.make()
            let hsm = try await token.open()
            #expect(hsm.capabilities.ecdhPath == .digestKey)
            #expect(hsm.capabilities.report.contains { $0.contains("ecdh+sp800-kdf-in-hsm: unsupported") })
            let key = try await hsm.generateKeyPair(KeySpecification(label: "merchant", algorithm: .ecP256, usage: [.derive]))
            guard case .ecP256(let point) = key.publicKey else {
                Issue.record("not EC")
                return
            }
            let merchantPublic = try P256.KeyAgreement.PublicKey(x963Representation: point)
            for round in 0..<16 {
                let ephemeral = P256.KeyAgreement.PrivateKey()
                let otherInfo = Array("round \(round)".utf8)
                let expected = softwareConcatenationKDF(try ephemeral.sharedSecretFromKeyAgreement(with: merchantPublic), otherInfo)
                let derived = try await hsm.deriveConcatenationKDFKey(
                    key.id, peerPoint: Array(ephemeral.publicKey.x963Representation), otherInfo: otherInfo)
                #expect(derived == expected)
            }
            // Every derived Z was destroyed: no secret key is left, only the merchant key pair in
            // the token and, on SoftHSM, the workers' session copies of its private key.
            let (secrets, tokenObjects, copies) = try await hsm.withSession { session throws(PKCS11Error) in
                (
                    try session.findObjects([.objectClass(.secretKey)]).count,
                    try session.findObjects([.bool(.token, true)]).count,
                    try session.findObjects([.objectClass(.privateKey), .bool(.token, false)]).count
                )
            }
            #expect(secrets == 0)
            #expect(tokenObjects == 2)
            #expect(token.backend == .softHSM ? (1...hsm.workerCount).contains(copies) : copies == 0, "\(copies) session copies")
            await hsm.close()
        }

        /// A token that takes `CKD_SHA256_KDF_SP800` but computes ANSI X9.63 (NSS softokn's
        /// `CKD_SHA256_KDF`, counter after Z) would decrypt nothing Apple sent: the probe compares its
        /// answer with SP 800-56A's and falls back to the digest path. The fault-injecting module
        /// rewrites the KDF on its way to NSS softokn, which computes X9.63 for real.
        @Test func nssX963KDFUnderTheSP800NameIsNotTrusted() async throws {
            let token = try await TestToken.make(backend: .nss)
            let device = try FaultInjectingPKCS11.make(target: token.modulePath, privateCopy: false)
            let sp800: UInt = 0x10  // CKD_SHA256_KDF_SP800
            let x963: UInt = 0x06  // CKD_SHA256_KDF
            device.rewriteECDHKDF(from: sp800, to: x963)
            let hsm = try await device.open(token)
            #expect(hsm.capabilities.ecdhPath == .digestKey)
            #expect(
                hsm.capabilities.report.contains("ECDH: ecdh+sp800-kdf-in-hsm: unsupported (the token's result differs from SP 800-56A)"),
                "\(hsm.capabilities.report)")
            await hsm.close()
        }

        @Test func extractablePathIsUsedOnlyWhenAllowedAndAgrees() async throws {
            let token = try await TestToken.make()
            let hsm = try await token.open()
            let key = try await hsm.generateKeyPair(KeySpecification(label: "m", algorithm: .ecP256, usage: [.derive]))
            await hsm.close()
            // With the stronger path available, allowing the weak one changes nothing.
            let allowing = try await token.open { $0.allowExtractableSharedSecret = true }
            #expect(allowing.capabilities.ecdhPath == .digestKey)
            let ephemeral = P256.KeyAgreement.PrivateKey()
            let strong = try await allowing.deriveConcatenationKDFKey(
                key.id, peerPoint: Array(ephemeral.publicKey.x963Representation), otherInfo: [1, 2, 3])
            let weak = try await allowing.withSession { session throws(PKCS11Error) in
                let handle = try session.findObjects([.objectClass(.privateKey), .id(key.id)]).first!
                return try session.deriveConcatenationKDFKey(
                    path: .extractableSecret, privateKey: handle,
                    peerPoint: Array(ephemeral.publicKey.x963Representation), otherInfo: [1, 2, 3])
            }
            #expect(strong == weak)
            await allowing.close()
        }

        @Test func stageVectorKDFInsideTheHSM() async throws {
            try #require(ConformanceVectors.available, "vectors absent")
            let vector = try ConformanceVectors.json("payu-kdf-gcm-unit", "vector.json")
            let z = try #require(Hex.decode(vector["sharedSecretZ_hex"] as! String))
            let otherInfo = try #require(Data(base64Encoded: vector["kdfOtherInfo_b64"] as! String))
            let expected = try #require(Data(base64Encoded: vector["symmetricKey_b64"] as! String))
            let hsm = try await TestToken.make().open()
            // Z enters the token as a sensitive, non-extractable secret; K comes out of C_DigestKey.
            let k = try await hsm.withSession { session throws(PKCS11Error) in
                let secret = try session.createObject([
                    .objectClass(.secretKey), .keyType(.genericSecret), .bool(.token, false),
                    .bool(.sensitive, true), .bool(.extractable, false), Attribute(.value, bytes: Array(z)),
                ])
                defer { try? session.destroyObject(secret) }
                return try session.concatenationKDF(secret: secret, otherInfo: Array(otherInfo))
            }
            #expect(k == Array(expected))
            let ciphertext = try #require(Data(base64Encoded: vector["ciphertextWithTag_b64"] as! String))
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: Data(count: 16)), ciphertext: ciphertext.dropLast(16), tag: ciphertext.suffix(16))
            let opened = try AES.GCM.open(box, using: SymmetricKey(data: k))
            #expect(String(decoding: opened, as: UTF8.self) == vector["plaintext"] as? String)
            await hsm.close()
        }

        @Test func concurrentDerivationsAcrossEightTasks() async throws {
            let hsm = try await TestToken.make().open()
            let key = try await hsm.generateKeyPair(KeySpecification(label: "busy", algorithm: .ecP256, usage: [.derive]))
            guard case .ecP256(let point) = key.publicKey else { return }
            let merchantPublic = try P256.KeyAgreement.PublicKey(x963Representation: point)
            let peers = (0..<32).map { _ in P256.KeyAgreement.PrivateKey() }
            let expected = try peers.map { softwareConcatenationKDF(try $0.sharedSecretFromKeyAgreement(with: merchantPublic), [9]) }
            // Half the tasks call from the cooperative pool (a hop per call), half run on the
            // HSM's workers (inline calls).
            let failures = try await withThrowingTaskGroup(of: Int.self) { group in
                for task in 0..<8 {
                    group.addTask(executorPreference: task % 2 == 0 ? nil : hsm.executor) {
                        var wrong = 0
                        for i in 0..<1000 {
                            let peer = (task * 1000 + i) % peers.count
                            let k = try await hsm.deriveConcatenationKDFKey(
                                key.id, peerPoint: Array(peers[peer].publicKey.x963Representation), otherInfo: [9])
                            if k != expected[peer] { wrong += 1 }
                        }
                        return wrong
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(failures == 0)
            await hsm.close()
        }

        /// Inline: maintenance waits for the calls running on the callers' threads and sends new
        /// ones through the queue until it is done.
        @Test(arguments: [HSMDispatch.inline, .pool])
        func recyclingWhileTasksRunFailsNothing(_ dispatch: HSMDispatch) async throws {
            let hsm = try await TestToken.make().open { $0.dispatch = dispatch }
            #expect(hsm.dispatch == dispatch)
            let key = try await hsm.generateKeyPair(KeySpecification(label: "recycled", algorithm: .ecP256, usage: [.derive]))
            let peer = P256.KeyAgreement.PrivateKey()
            guard case .ecP256(let point) = key.publicKey else { return }
            let expected = softwareConcatenationKDF(
                try peer.sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(x963Representation: point)), [7])
            let completed = try await withThrowingTaskGroup(of: Int.self) { group in
                for task in 0..<4 {
                    group.addTask(executorPreference: task % 2 == 0 ? nil : hsm.executor) {
                        var done = 0
                        for _ in 0..<1000 {
                            let k = try await hsm.deriveConcatenationKDFKey(
                                key.id, peerPoint: Array(peer.publicKey.x963Representation), otherInfo: [7])
                            if k == expected { done += 1 }
                        }
                        return done
                    }
                }
                group.addTask {
                    for _ in 0..<3 {
                        try await Task.sleep(for: .milliseconds(30))
                        try await hsm.recycle()
                    }
                    return 0
                }
                return try await group.reduce(0, +)
            }
            #expect(completed == 4000)
            #expect(hsm.recycles == 3)
            await hsm.close()
        }

        @Test func excessLoadIsRefusedAtOnceAsOverloaded() async throws {
            // The bound is the queue's: inline calls never wait in it.
            let hsm = try await TestToken.make().open {
                $0.workers = 1
                $0.maxPendingOperations = 2
                $0.dispatch = .pool
            }
            let key = try await hsm.generateKeyPair(KeySpecification(label: "m", algorithm: .ecP256, usage: [.sign]))
            let digest = [UInt8](repeating: 1, count: 32)
            let outcomes = await withTaskGroup(of: PKCS11Error.Code?.self) { group in
                for _ in 0..<64 {
                    group.addTask {
                        do {
                            _ = try await hsm.signECDSA(key.id, digest: digest)
                            return nil
                        } catch let error as PKCS11Error {
                            return error.code
                        } catch {
                            return .invalidInput
                        }
                    }
                }
                return await group.reduce(into: [PKCS11Error.Code?]()) { $0.append($1) }
            }
            let succeeded = outcomes.filter { $0 == nil }.count
            let refused = outcomes.filter { $0 == PKCS11Error.Code.overloaded }.count
            #expect(succeeded > 0)
            #expect(refused > 0)
            #expect(succeeded + refused == 64)
            await hsm.close()
        }
    }
}
