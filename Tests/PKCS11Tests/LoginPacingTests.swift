import Foundation
import PKCS11
import PaywardenHSMTesting
import PaywardenTestTraits
import Testing

/// Re-establishing a lost HSM: a refused PIN is never presented twice, and other failures are
/// retried after pauses that grow, against a real SoftHSM token behind the fault-injecting module.
@Suite(.serialized, .releasesTestResources)
struct LoginPacingTests {
    @Test func aRefusedPINIsNotPresentedAgainUntilItChanges() async throws {
        let token = try await SoftHSMTestToken.make()
        let device = try FaultInjectingPKCS11.make()
        let hsm = try await device.open(token)
        let correctPIN = try Data(contentsOf: URL(fileURLWithPath: token.pinFile))
        try OwnerOnlyFile.write("not-the-pin", to: token.pinFile)
        let loginsBefore = try device.calls("C_Login")

        let refused = await #expect(throws: PKCS11Error.self) { try await hsm.recycle() }
        #expect(refused?.returnValue == .pinIncorrect, "SoftHSM itself refused the PIN: \(String(describing: refused))")
        #expect(try device.calls("C_Login") == loginsBefore + 1)
        #expect(hsm.pinRefused)
        #expect(!hsm.isLoggedIn)

        // Forty more attempts over four seconds, as a maintenance loop and a stream of requests
        // would make them: not one reaches C_Login with the refused PIN.
        for _ in 0..<40 {
            try await Task.sleep(for: .milliseconds(100))
            await #expect(throws: PKCS11Error.self) { try await hsm.recycle() }
            _ = try? await hsm.withSession { session throws(PKCS11Error) in session.isLoggedIn }
        }
        #expect(try device.calls("C_Login") == loginsBefore + 1, "a refused PIN must never be presented again")

        // The operator fixes the file: the next attempt logs in with it.
        try OwnerOnlyFile.write(correctPIN, to: token.pinFile)
        try await Task.sleep(for: .milliseconds(300))
        try await hsm.recycle()
        #expect(try device.calls("C_Login") == loginsBefore + 2)
        #expect(hsm.isLoggedIn && !hsm.pinRefused)
        let keys = try await hsm.keys()
        #expect(keys.isEmpty)
    }

    @Test func failedAttemptsArePacedExponentially() async throws {
        let token = try await SoftHSMTestToken.make()
        let device = try FaultInjectingPKCS11.make()
        let hsm = try await device.open(token)
        try device.fail("C_GetSlotList", with: .deviceError)
        let initializations = try device.calls("C_Initialize")
        // Three seconds of attempts every 20 ms: pauses of 250 ms, 500 ms, 1 s and 2 s allow
        // four real attempts (five at most with timing slack), not 150.
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < .seconds(3) {
            await #expect(throws: PKCS11Error.self) { try await hsm.recycle() }
            try await Task.sleep(for: .milliseconds(20))
        }
        let attempts = try device.calls("C_Initialize") - initializations
        #expect((3...5).contains(attempts), "\(attempts) re-initialisations in 3 s")
        #expect(!hsm.isLoggedIn)

        // Operations on the logged-out HSM fail fast and typed, never on an unauthenticated session.
        let refused = await #expect(throws: PKCS11Error.self) { try await hsm.keys() }
        #expect(refused?.category == .retry || refused?.category == .relogin, "\(String(describing: refused))")

        // Once the pause running now ends (1 to 4 s, by how many attempts fitted in the 3 s), the HSM comes back.
        try device.stopFailing("C_GetSlotList")
        let pauseEnds = if case .pausing(let until) = hsm.loginGuardHold { until } else { clock.now }
        let back = clock.now + .seconds(15)
        while (try? await hsm.recycle()) == nil, clock.now < back { try await Task.sleep(for: .milliseconds(100)) }
        #expect(hsm.isLoggedIn)
        #expect(clock.now - pauseEnds < .seconds(2), "back \(clock.now - pauseEnds) after the pause ended")
        _ = try await hsm.keys()
    }

    /// Requests that fail together on a lost HSM make one attempt between them: those queued
    /// behind a failed attempt see its pause, not a chance to try again each.
    @Test func requestsFailingTogetherMakeOneAttempt() async throws {
        let token = try await SoftHSMTestToken.make()
        let device = try FaultInjectingPKCS11.make()
        let hsm = try await device.open(token) { $0.workers = 4 }
        let initializations = try device.calls("C_Initialize")
        device.removeDevice()
        let started = ContinuousClock.now
        let failures = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    do {
                        _ = try await hsm.keys()
                        return 0
                    } catch {
                        return 1
                    }
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 64)
        let attempts = try device.calls("C_Initialize") - initializations
        // A second attempt is right only if a request came after the first pause (250 ms) had ended,
        // which a loaded machine can make happen.
        let elapsed = ContinuousClock.now - started
        #expect(attempts == 1 || (attempts == 2 && elapsed > .milliseconds(250)), "\(attempts) re-initialisations for one lost HSM")
        guard case .pausing(let until) = hsm.loginGuardHold else {
            Issue.record("no pause after the failed attempt: \(String(describing: hsm.loginGuardHold))")
            return
        }
        // The pause of the last attempt (250 ms after one, 500 ms after two), not a longer one.
        #expect(until - ContinuousClock.now <= .milliseconds(attempts == 1 ? 250 : 500), "the last attempt's pause, not a later one")

        device.restoreDevice()
        try await Task.sleep(until: until + .milliseconds(50), clock: .continuous)
        #expect(try await hsm.keys().isEmpty)
        #expect(hsm.isLoggedIn)
    }

    @Test func aStuckHSMCallMeetsItsDeadline() async throws {
        let token = try await SoftHSMTestToken.make()
        let device = try FaultInjectingPKCS11.make()
        // The worker pool's deadline (InlineDispatchTests has the inline one's).
        let hsm = try await device.open(token) {
            $0.workers = 1
            $0.dispatch = .pool
            $0.operationTimeout = .milliseconds(300)
            $0.healthCheckTimeout = .milliseconds(200)
        }
        try device.hang("C_FindObjectsInit")
        let clock = ContinuousClock()
        let start = clock.now
        let stuck = await #expect(throws: PKCS11Error.self) { try await hsm.keys() }
        #expect(stuck?.code == .timedOut)
        #expect(clock.now - start < .seconds(2))
        // The only worker is stuck, so the health check cannot run either, and says so in time.
        let probe = await #expect(throws: PKCS11Error.self) { try await hsm.checkHealth() }
        #expect(probe?.code == .timedOut)

        try device.release()
        try await hsm.checkHealth()
        _ = try await hsm.keys()
    }
}
