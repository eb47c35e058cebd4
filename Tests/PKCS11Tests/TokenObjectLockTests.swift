import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import PaywardenTestTraits
import Testing

/// Token objects made and destroyed beside other calls without a failure (creations run alone:
/// `TokenObjectLock`), and a creation behind a call stuck in the module given up, not waited for
/// without end.
@Suite(.serialized, .releasesTestResources)
struct TokenObjectLockTests {
    /// Keys made and destroyed while other tasks sign and list keys: every call succeeds. SoftHSM
    /// fails a creation now and then while another thread reads its object store (SoftHSMv2
    /// issue 573), NSS softokn stalls; creations run alone, so neither does here. A listing skips a
    /// key destroyed between its find and its read.
    @Test func keysAreMadeAndDestroyedWhileOtherCallsRun() async throws {
        let hsm = try await TestToken.make().open()
        let signer = try await hsm.generateKeyPair(KeySpecification(label: "signer", algorithm: .ecP256, usage: [.sign]))
        let digest = Array(SHA256.hash(data: Data("beside the changes".utf8)))
        let made = try await withThrowingTaskGroup(of: KeyIdentifier?.self) { group in
            for index in 0..<24 {
                group.addTask {
                    let key = try await hsm.generateKeyPair(
                        KeySpecification(label: "concurrent-\(index)", algorithm: .ecP256, usage: [.sign]))
                    if index.isMultiple(of: 3) {
                        #expect(try await hsm.destroyKeyPair(key.id) == 2)
                        return nil
                    }
                    return key.id
                }
                group.addTask {
                    _ = try await hsm.signECDSA(signer.id, digest: digest)
                    _ = try await hsm.keys()
                    return nil
                }
            }
            var made: Set<KeyIdentifier> = []
            for try await id in group { if let id { made.insert(id) } }
            return made
        }
        #expect(made.count == 16)
        #expect(Set(try await hsm.keys().map(\.id)) == made.union([signer.id]))
        await hsm.close()
    }

    /// A call stuck in the module holds a creation back for `TokenObjectLock.creationWait` only:
    /// the creation is refused as timed out, nothing was made, and key operations go on meanwhile
    /// (held back for the last 100 ms of the wait at most) and after.
    @Test func aCreationBehindACallStuckInTheModuleIsGivenUp() async throws {
        let device = try FaultInjectingPKCS11.make()
        let hsm = try await device.open(try await SoftHSMTestToken.make()) {
            $0.dispatch = .pool
            $0.workers = 3
        }
        let signer = try await hsm.generateKeyPair(KeySpecification(label: "signer", algorithm: .ecP256, usage: [.sign]))
        let digest = Array(SHA256.hash(data: Data("stuck".utf8)))
        try device.hang("C_Sign", times: 1)
        let stuck = Task { try await hsm.signECDSA(signer.id, digest: digest) }
        try await device.waitUntilHung("C_Sign")

        let clock = ContinuousClock()
        let start = clock.now
        let creation = Task { try await hsm.generateKeyPair(KeySpecification(label: "held back", algorithm: .ecP256, usage: [.sign])) }
        try await Task.sleep(for: .milliseconds(200))
        #expect(!(try await hsm.signECDSA(signer.id, digest: digest)).isEmpty, "a key operation while the creation waits")
        let signedMeanwhile = clock.now - start
        let refused = await #expect(throws: PKCS11Error.self) { try await creation.value }
        let waited = clock.now - start
        #expect(signedMeanwhile < waited - .milliseconds(100), "signed after \(signedMeanwhile), refused after \(waited)")
        #expect(refused?.code == .timedOut && refused?.category == .retry, "\(String(describing: refused))")
        #expect(refused?.message.contains("no object was made") == true, "\(String(describing: refused))")
        #expect(waited >= .milliseconds(950) && waited < .seconds(4), "waited \(waited)")
        #expect(try await hsm.keys().map(\.id) == [signer.id], "nothing was made")
        #expect(!(try await hsm.signECDSA(signer.id, digest: digest)).isEmpty, "key operations go on")

        try device.release()
        #expect(!(try await stuck.value).isEmpty)
        let made = try await hsm.generateKeyPair(KeySpecification(label: "once released", algorithm: .ecP256, usage: [.sign]))
        #expect(Set(try await hsm.keys().map(\.id)) == [signer.id, made.id])
        await hsm.close()
    }
}
