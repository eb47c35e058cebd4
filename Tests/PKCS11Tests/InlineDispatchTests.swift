import Crypto
import Foundation
import PKCS11
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// Inline dispatch: calls on the caller's own thread and session for a module in the process,
/// the worker pool for one that answers slowly, and a call that overruns its deadline sending
/// every later call to the pool, where deadlines hold (SoftHSM, some behind the fault-injecting module).
@Suite(.serialized, .releasesTestResources)
struct InlineDispatchTests {
    @Test func autoRunsAnInProcessModuleInlineAndASlowOneOnThePool() async throws {
        let token = try await TestToken.make()
        let local = try await token.open()
        #expect(local.dispatchChoice.configured == .auto)
        #expect(local.dispatchChoice.chosen == .inline, "\(local.dispatchChoice.summary)")
        #expect(local.dispatchChoice.roundTrip < local.dispatchChoice.threshold)
        #expect(local.dispatch == .inline)
        #expect(local.dispatchChoice.summary.hasPrefix("inline (auto: the module answers a round trip in"))

        // A module whose every call waits 1 ms, as across a network.
        let device = try FaultInjectingPKCS11.make()
        try device.addLatency("*", microseconds: 1000)
        let behindDevice = try await SoftHSMTestToken.make()
        let remote = try await device.open(behindDevice)
        #expect(remote.dispatchChoice.chosen == .pool, "\(remote.dispatchChoice.summary)")
        #expect(remote.dispatchChoice.roundTrip >= .milliseconds(1))
        #expect(remote.dispatch == .pool)

        // Configured, it is what is used, whatever the round trip.
        let forced = try await device.open(behindDevice) { $0.dispatch = .inline }
        #expect(forced.dispatch == .inline && forced.dispatchChoice.configured == .inline)
        try device.addLatency("*", microseconds: 0)
        let pooled = try await token.open { $0.dispatch = .pool }
        #expect(pooled.dispatch == .pool && pooled.dispatchChoice.summary.hasPrefix("pool (configured;"))
    }

    /// The session work runs on the calling thread inline, on a worker thread with the pool.
    @Test(arguments: [HSMDispatch.inline, .pool])
    func callsRunOnTheCallersThreadOnlyInline(_ dispatch: HSMDispatch) async throws {
        let hsm = try await TestToken.make().open { $0.dispatch = dispatch }
        for _ in 0..<20 {
            let caller = pthread_self()
            let ranOn = try await hsm.withSession { _ in pthread_self() }
            #expect((ranOn == caller) == (dispatch == .inline), "\(dispatch)")
        }
    }

    /// Every thread that calls gets a session of its own: calls from many tasks at once, inline,
    /// all compute what software computes.
    @Test func concurrentInlineCallsEachUseTheirThreadsSession() async throws {
        let hsm = try await TestToken.make().open { $0.dispatch = .inline }
        let key = try await hsm.generateKeyPair(KeySpecification(label: "inline", algorithm: .ecP256, usage: [.derive]))
        guard case .ecP256(let point) = key.publicKey else { return }
        let peer = P256.KeyAgreement.PrivateKey()
        let expected = softwareConcatenationKDF(
            try peer.sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(x963Representation: point)), [9])
        let matches = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var matches = 0
                    for _ in 0..<200 {
                        let derived = try await hsm.deriveConcatenationKDFKey(
                            key.id, peerPoint: Array(peer.publicKey.x963Representation), otherInfo: [9])
                        if derived == expected { matches += 1 }
                    }
                    return matches
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(matches == 1600)
    }

    /// An inline call cannot be given up on: when one overruns its deadline, the watchdog sends
    /// every later call to the workers (where a caller is answered at its deadline), the health
    /// check fails while the call is stuck, and the stuck call's result, once it comes, is
    /// discarded as a timeout, as the queue would have.
    @Test func aCallOverrunningItsDeadlineSendsLaterCallsToThePool() async throws {
        let device = try FaultInjectingPKCS11.make()
        let hsm = try await device.open(try await SoftHSMTestToken.make()) {
            $0.dispatch = .inline
            $0.workers = 1
            $0.operationTimeout = .milliseconds(300)
            $0.healthCheckTimeout = .milliseconds(200)
        }
        let key = try await hsm.generateKeyPair(KeySpecification(label: "stuck", algorithm: .ecP256, usage: [.sign]))
        let digest = Array(SHA256.hash(data: Data("stuck".utf8)))
        try device.hang("C_Sign", times: 1)
        let stuck = Task { try await hsm.signECDSA(key.id, digest: digest) }
        try await device.waitUntilHung("C_Sign")
        let clock = ContinuousClock()
        let start = clock.now
        while hsm.dispatch == .inline && clock.now - start < .seconds(5) { try await Task.sleep(for: .milliseconds(20)) }
        #expect(hsm.dispatch == .pool, "the watchdog turned inline dispatch off")
        #expect(hsm.dispatchChoice.chosen == .inline, "the choice made at open is still reported as made")
        let unhealthy = await #expect(throws: PKCS11Error.self) { try await hsm.checkHealth() }
        #expect(unhealthy?.code == .timedOut)
        #expect(unhealthy?.message.contains("past its deadline") == true, "\(String(describing: unhealthy))")

        // Later calls run on the worker and answer; the hang was for one call only.
        let signed = try await hsm.signECDSA(key.id, digest: digest)
        #expect(!signed.isEmpty)
        let caller = pthread_self()
        #expect(try await hsm.withSession { _ in pthread_self() } != caller, "on a worker")

        try device.release()
        let late = await #expect(throws: PKCS11Error.self) { try await stuck.value }
        #expect(late?.code == .timedOut, "a result past the deadline is discarded")
        try await hsm.checkHealth()
        #expect(hsm.dispatch == .pool)
    }
}
