import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import Testing
import _CryptoExtras

/// The fault-injecting module is a tool for other tests; these prove it does what it is told,
/// against a real SoftHSM token, through the project's own `HSM`.
extension HSMTests {
    @Suite struct FaultInjectingModule {
        @Test func forwardsToSoftHSMAndCountsCalls() async throws {
            let token = try await SoftHSMTestToken.make()
            let device = try FaultInjectingPKCS11.make()
            let hsm = try await device.open(token)
            #expect(hsm.configuration.modulePath == device.modulePath)
            #expect(hsm.token.manufacturer.hasPrefix("SoftHSM"))

            let signer = try await hsm.generateKeyPair(KeySpecification(label: "signer", algorithm: .ecP256, usage: [.sign]))
            let message = Data("through the fault-injecting module".utf8)
            try verify(try await hsm.signECDSA(signer.id, digest: Array(SHA256.hash(data: message))), of: message, by: signer)

            let decrypter = try await hsm.generateKeyPair(KeySpecification(label: "rsa", algorithm: .rsa2048, usage: [.decrypt]))
            guard case .rsa(let n, let e) = decrypter.publicKey else {
                Issue.record("not RSA")
                return
            }
            let secret = Array(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) })
            let wrapped = Array(try _RSA.Encryption.PublicKey(n: n, e: e).encrypt(secret, padding: .PKCS1_OAEP_SHA256))
            #expect(try await hsm.decryptOAEPSHA256(decrypter.id, ciphertext: wrapped) == secret)

            #expect(try device.calls("C_Initialize") == 1)
            #expect(try device.calls("C_Login") == 1)
            #expect(try device.calls("C_Sign") >= 1)
            #expect(try device.calls("C_Decrypt") >= 1)
            #expect(try device.calls("*") > device.calls("C_Sign") + device.calls("C_Decrypt"))
            #expect((1...hsm.workerCount + 1).contains(device.openSessions))  // the login anchor and the workers'

            // The device runs its own SoftHSM on the same token store: a direct HSM sees the keys
            // made through the device, and outlives the device's C_Finalize.
            let direct = try await token.open()
            await hsm.close()
            #expect(try device.calls("C_Finalize") == 1)
            #expect(device.openSessions == 0)
            try verify(try await direct.signECDSA(signer.id, digest: Array(SHA256.hash(data: message))), of: message, by: signer)
            await direct.close()
        }

        @Test func injectedErrorsComeBackAsTypedErrorsForAsManyCallsAsAsked() async throws {
            let device = try FaultInjectingPKCS11.make()
            let hsm = try await device.open(try await SoftHSMTestToken.make())
            let key = try await hsm.generateKeyPair(KeySpecification(label: "signer", algorithm: .ecP256, usage: [.sign]))
            let digest = Array(SHA256.hash(data: Data("m".utf8)))
            let sign: @Sendable () async throws(PKCS11Error) -> [UInt8] = {
                try await hsm.withSession(retryingAfterLostLogin: false) { session throws(PKCS11Error) in
                    let handle = try session.tokenObjects(.privateKey, id: key.id)[0]
                    return try session.signECDSA(privateKey: handle, digest: digest)
                }
            }

            for value in [ReturnValue.deviceRemoved, .sessionHandleInvalid, .userNotLoggedIn, .generalError] {
                try device.fail("C_Sign", with: value, times: 1)
                let error = await #expect(throws: PKCS11Error.self) { try await sign() }
                #expect(error?.returnValue == value)
                #expect(error?.function == "C_Sign")
                // Once only, and the failed call ended the signing: no CKR_OPERATION_ACTIVE after it.
                #expect(try await sign().count == 64)
            }

            try device.fail("C_SignInit", with: .deviceRemoved)
            for _ in 0..<3 {
                let error = await #expect(throws: PKCS11Error.self) { try await sign() }
                #expect(error?.returnValue == .deviceRemoved)
                #expect(error?.category == .relogin)
            }
            let signsBefore = try device.calls("C_Sign")
            try device.stopFailing("C_SignInit")
            #expect(try await sign().count == 64)
            #expect(try device.calls("C_Sign") == signsBefore + 1)

            // "*" applies to every function without a setting of its own.
            try device.fail("*", with: .generalError)
            await #expect(throws: PKCS11Error.self) { try await sign() }
            device.clear()
            #expect(try await sign().count == 64)
        }

        @Test func aWrongPINReachesTheTokenOncePerOpen() async throws {
            let token = try await SoftHSMTestToken.make()
            let device = try FaultInjectingPKCS11.make()
            let wrongPIN = token.directory + "/\(token.label)-wrong.pin"
            try OwnerOnlyFile.write("000000", to: wrongPIN)
            defer { try? FileManager.default.removeItem(atPath: wrongPIN) }

            let refused = await #expect(throws: PKCS11Error.self) { try await device.open(token) { $0.pin = .file(wrongPIN) } }
            #expect(refused?.returnValue == .pinIncorrect)
            #expect(try device.calls("C_Login") == 1)

            // An injected refusal is counted the same, and never reaches SoftHSM's PIN counter.
            try device.fail("C_Login", with: .pinLocked, times: 1)
            let locked = await #expect(throws: PKCS11Error.self) { try await device.open(token) }
            #expect(locked?.returnValue == .pinLocked)
            #expect(try device.calls("C_Login") == 2)

            let hsm = try await device.open(token)
            #expect(try device.calls("C_Login") == 3)
            await hsm.close()
        }

        @Test func aHangHoldsTheCallUntilReleasedOrItsBound() async throws {
            let device = try FaultInjectingPKCS11.make()
            let hsm = try await device.open(try await SoftHSMTestToken.make())
            let key = try await hsm.generateKeyPair(KeySpecification(label: "signer", algorithm: .ecP256, usage: [.sign]))
            let message = Data("held".utf8)
            let digest = Array(SHA256.hash(data: message))
            let clock = ContinuousClock()

            try device.hang("C_Sign")
            let start = clock.now
            let signing = Task { try await hsm.signECDSA(key.id, digest: digest) }
            try await device.waitUntilHung("C_Sign")
            try await Task.sleep(for: .milliseconds(200))
            #expect(try device.hungCalls("C_Sign") == 1)
            try device.release("C_Sign")
            try verify(try await signing.value, of: message, by: key)
            #expect(clock.now - start >= .milliseconds(200))
            #expect(try device.hungCalls() == 0)

            // Released, it no longer hangs; a bounded hang lets each call go after its bound.
            try verify(try await hsm.signECDSA(key.id, digest: digest), of: message, by: key)
            try device.hang("C_Sign", times: 1, atMost: .milliseconds(150))
            let bounded = clock.now
            try verify(try await hsm.signECDSA(key.id, digest: digest), of: message, by: key)
            #expect(clock.now - bounded >= .milliseconds(150))
        }

        @Test func latencyIsAddedToEveryCall() async throws {
            let device = try FaultInjectingPKCS11.make()
            let hsm = try await device.open(try await SoftHSMTestToken.make())
            let key = try await hsm.generateKeyPair(KeySpecification(label: "signer", algorithm: .ecP256, usage: [.sign]))
            let digest = Array(SHA256.hash(data: Data("slow".utf8)))
            let clock = ContinuousClock()

            try device.addLatency("C_Sign", microseconds: 40_000)
            try device.addLatency("C_SignInit", microseconds: 10_000)
            for _ in 0..<3 {
                let start = clock.now
                _ = try await hsm.signECDSA(key.id, digest: digest)
                #expect(clock.now - start >= .milliseconds(50))
            }
            try device.addLatency("C_Sign", microseconds: 0)
            try device.addLatency("C_SignInit", microseconds: 0)
            _ = try await hsm.signECDSA(key.id, digest: digest)
        }

        @Test func aRemovedDeviceFailsEveryCallAndEndsItsSessions() async throws {
            let device = try FaultInjectingPKCS11.make()
            let hsm = try await device.open(try await SoftHSMTestToken.make())
            let key = try await hsm.generateKeyPair(KeySpecification(label: "signer", algorithm: .ecP256, usage: [.sign]))
            let message = Data("removed".utf8)
            let digest = Array(SHA256.hash(data: message))
            #expect(device.openSessions > 0)

            device.removeDevice()
            #expect(device.openSessions == 0)
            let removed = await #expect(throws: PKCS11Error.self) { try await hsm.signECDSA(key.id, digest: digest) }
            #expect(removed?.returnValue == .deviceRemoved)
            #expect(removed?.category == .relogin)
            let info = try hsm.module.info()  // C_GetInfo still answers, as a library without its device does
            #expect(info.manufacturer.hasPrefix("SoftHSM"))

            // Back, the old sessions are gone (and the login with them) until the HSM opens new ones.
            device.restoreDevice()
            // The failed re-establishment the signature triggered left the HSM logged out: the
            // next operation re-establishes it first (once the pause after that failure is over).
            #expect(!hsm.isLoggedIn)
            try await recycleOnceAllowed(hsm)
            try verify(try await hsm.signECDSA(key.id, digest: digest), of: message, by: key)

            // A removal that keeps the sessions is a blip: they work again once it ends.
            device.removeDevice(endingSessions: false)
            await #expect(throws: PKCS11Error.self) {
                try await hsm.withSession(retryingAfterLostLogin: false) { session throws(PKCS11Error) in
                    try session.signECDSA(privateKey: try session.tokenObjects(.privateKey, id: key.id)[0], digest: digest)
                }
            }
            device.restoreDevice()
            #expect(try await hsm.withSession(retryingAfterLostLogin: false) { $0.isLoggedIn })
        }

        /// Removals under load: the module waits for the calls inside SoftHSM before it closes
        /// their sessions (SoftHSM frees a session another thread may be using), so nothing crashes
        /// and every failure is a typed error.
        @Test func removalsUnderLoadAreSafe() async throws {
            let device = try FaultInjectingPKCS11.make()
            let hsm = try await device.open(try await SoftHSMTestToken.make()) { $0.workers = 4 }
            let key = try await hsm.generateKeyPair(KeySpecification(label: "signer", algorithm: .ecP256, usage: [.sign]))
            let message = Data("under load".utf8)
            let digest = Array(SHA256.hash(data: message))

            let outcomes = try await withThrowingTaskGroup(of: Bool?.self) { group in
                for _ in 0..<400 {
                    group.addTask {
                        do {
                            return try await hsm.signECDSA(key.id, digest: digest).isEmpty == false
                        } catch {
                            return nil  // a PKCS11Error: signECDSA throws nothing else
                        }
                    }
                }
                group.addTask {
                    for _ in 0..<5 {
                        try await Task.sleep(for: .milliseconds(15))
                        device.removeDevice()
                        try await Task.sleep(for: .milliseconds(15))
                        device.restoreDevice()
                    }
                    return nil
                }
                return try await group.reduce(into: [Bool?]()) { $0.append($1) }
            }
            #expect(outcomes.contains(true))
            #expect(try device.calls("C_Sign") > 0)

            try await recycleOnceAllowed(hsm)
            try verify(try await hsm.signECDSA(key.id, digest: digest), of: message, by: key)
        }

        @Test func unknownNamesAndSpecifications() throws {
            let device = try FaultInjectingPKCS11.make()
            #expect(throws: FaultInjectingPKCS11.ControlError.self) { try device.fail("C_Nope", with: .generalError) }
            #expect(throws: FaultInjectingPKCS11.ControlError.self) { try device.calls("c_sign") }
            try device.apply("C_Sign=error:CKR_DEVICE_REMOVED:2; C_Login=latency:10\n*=hang:5:1; device=removed:keep-sessions")
            device.clear()
            #expect(throws: FaultInjectingPKCS11.ControlError.self) { try device.apply("C_Sign=error:5; C_Sign=explode") }
            #expect(try device.calls("*") == 0)
        }

        private func verify(_ der: [UInt8], of message: Data, by key: KeyObject) throws {
            guard case .ecP256(let point) = key.publicKey else {
                Issue.record("not EC")
                return
            }
            let publicKey = try P256.Signing.PublicKey(x963Representation: point)
            #expect(publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: der), for: message))
        }
    }

}

/// Recycles as soon as the HSM's pacing after the failures the removal caused allows it.
private func recycleOnceAllowed(_ hsm: HSM) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(10)
    while true {
        do {
            try await hsm.recycle()
            return
        } catch  where clock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
