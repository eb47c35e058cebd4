import Crypto
import Foundation
import PKCS11
import PaywardenHSMTesting
import PaywardenTestTraits
import Testing

/// Inline dispatch: calls on a companion of the caller's thread, which it waits for, for a module in the process,
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
        #expect(local.dispatchChoice.summary.hasPrefix("inline (auto: the module's fastest round trip of 15 took"))
        #expect(local.dispatchChoice.samples.count == 15 && local.dispatchChoice.samples.first == local.dispatchChoice.roundTrip)

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

    /// Inline, the session work runs on the calling thread's companion, which its caller waits for:
    /// the same companion for every call of that thread, never the caller itself; with the pool,
    /// on the one worker.
    @Test(arguments: [HSMDispatch.inline, .pool])
    func callsRunOnTheCallersCompanionOnlyInline(_ dispatch: HSMDispatch) async throws {
        let hsm = try await TestToken.make().open {
            $0.dispatch = dispatch
            $0.workers = 1
        }
        let ranOn = try await Task.detached { () async throws -> [UInt: Set<UInt>] in
            var ranOn: [UInt: Set<UInt>] = [:]
            for _ in 0..<40 {
                let caller = UInt(pthread_self())
                let thread = try await hsm.withSession { _ in UInt(pthread_self()) }
                #expect(thread != caller, "\(dispatch): on the caller's own thread")
                ranOn[caller, default: []].insert(thread)
            }
            return ranOn
        }.value
        let threads = ranOn.values.reduce(into: Set<UInt>()) { $0.formUnion($1) }
        switch dispatch {
        case .inline: #expect(ranOn.values.allSatisfy { $0.count == 1 }, "one companion per calling thread: \(ranOn)")
        default: #expect(threads.count == 1, "the one worker: \(ranOn)")
        }
    }

    /// A call that outlasts its caller's wait (``SessionPool/inlineWaitBound``) lets the caller's
    /// thread go: calls from that thread go on at once on a new companion while the slow one runs,
    /// and the slow one is answered when it returns.
    @Test func aSlowInlineCallLetsItsCallersThreadGo() async throws {
        let device = try FaultInjectingPKCS11.make()
        let hsm = try await device.open(try await SoftHSMTestToken.make()) {
            $0.dispatch = .inline
            $0.operationTimeout = .seconds(10)
        }
        let key = try await hsm.generateKeyPair(KeySpecification(label: "slow", algorithm: .ecP256, usage: [.sign]))
        let digest = Array(SHA256.hash(data: Data("slow".utf8)))
        try device.hang("C_Sign", times: 1)
        let slow = Task { try await hsm.signECDSA(key.id, digest: digest) }
        try await device.waitUntilHung("C_Sign")
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<20 { #expect(!(try await hsm.signECDSA(key.id, digest: digest)).isEmpty) }
        #expect(clock.now - start < .seconds(1), "calls waited for the stuck one: \(clock.now - start)")
        #expect(hsm.dispatch == .inline, "the deadline (10 s) has not passed")
        try device.release()
        #expect(!(try await slow.value).isEmpty, "the slow call is answered when it returns")
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

    /// An inline call that overruns its deadline: its caller is answered with a timeout at the
    /// deadline (as on the workers), the watchdog sends every later call to the workers, the
    /// health check fails while the call is stuck, and its result, once it comes, is discarded.
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
        let worker = try await hsm.withSession { _ in UInt(pthread_self()) }
        #expect(try await hsm.withSession { _ in UInt(pthread_self()) } == worker, "on the one worker, not a companion")

        try device.release()
        let late = await #expect(throws: PKCS11Error.self) { try await stuck.value }
        #expect(late?.code == .timedOut, "a result past the deadline is discarded")
        // Its caller was answered at the deadline; the call itself returns once released.
        let released = clock.now
        while (try? await hsm.checkHealth()) == nil && clock.now - released < .seconds(5) { try await Task.sleep(for: .milliseconds(20)) }
        try await hsm.checkHealth()
        #expect(hsm.dispatch == .pool)
    }
}
