import Foundation
import PKCS11
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

/// The service under HSM faults, injected by the project's fault-injecting PKCS#11 module in
/// front of a real SoftHSM token: errors, a device that disappears, hangs, a wrong PIN. Whatever
/// happens, a request gets 200 or a typed, retryable 503; no token is decrypted twice, and none
/// has its transaction id burned by a fault that was not its own. Every test runs with both
/// dispatches: HSM calls on the requests' own threads (inline) and on the worker threads (pool).
@Suite(.serialized, .releasesTestResources)
struct HSMFaultTests {
    /// Errors after full verification, on every path that reaches the key: the request is a 503
    /// with Retry-After, and the same token decrypts once the fault is gone, exactly once.
    @Test(arguments: dispatches, [ReturnValue.generalError, .deviceRemoved, .sessionHandleInvalid, .userNotLoggedIn, .deviceError])
    func hsmErrorsAreRetryableAndBurnNoTransactionID(_ dispatch: HSMDispatch, _ value: ReturnValue) async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withServer(device, dispatch) { server in
            #expect(try await server.waitForReadiness(200))
            let ec = try server.ecToken()
            let rsa = try server.rsaToken()
            try device.fail("C_DeriveKey", with: value)
            try device.fail("C_Decrypt", with: value)
            for token in [ec, rsa] {
                let refused = try await server.send(body: token)
                #expect(refused.status == 503, "\(value.name): \(refused.text)")
                #expect(refused.errorCode == "hsm_unavailable")
                #expect(refused.header("Retry-After") == "1")
                // The HSM's words (the function, its return code, the key) are the operator's: the log has them.
                #expect(!refused.text.contains("CKR_") && !refused.text.contains("C_De"), "\(refused.text)")
            }
            #expect(server.logs.text.contains("request failed") && server.logs.text.contains(value.name), "\(value.name)")
            try device.stopFailing("C_DeriveKey")
            try device.stopFailing("C_Decrypt")
            #expect(try await server.waitForReadiness(200))
            for token in [ec, rsa] {
                let decrypted = try await server.send(body: token)
                #expect(decrypted.status == 200, "\(value.name): the fault must not have burned the id: \(decrypted.text)")
                let replayed = try await server.send(body: token)
                #expect(replayed.errorCode == "replayed_transaction", "decrypted once: \(replayed.text)")
            }
        }
    }

    /// `CKR_FUNCTION_FAILED` or `CKR_GENERAL_ERROR` on the key operation of one token, while the
    /// module runs the same operation correctly just after: the token is `decryption_failed`, the
    /// service stays ready, the failure is counted, and the next token decrypts.
    @Test(arguments: dispatches, [ReturnValue.functionFailed, .generalError])
    func aModuleFailureOnOneTokensKeyIsThatTokensFault(_ dispatch: HSMDispatch, _ value: ReturnValue) async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withServer(device, dispatch) { server in
            #expect(try await server.waitForReadiness(200))
            for (function, token) in [("C_DeriveKey", try server.ecToken()), ("C_Decrypt", try server.rsaToken())] {
                try device.fail(function, with: value, times: 1)
                let refused = try await server.send(body: token)
                #expect(refused.status == 422 && refused.errorCode == "decryption_failed", "\(function) \(value.name): \(refused.text)")
                #expect(refused.header("Retry-After") == nil)
                #expect(try await server.operations("/readyz").status == 200, "the HSM answered its check: still ready")
            }
            let metrics = String(decoding: try await server.operations("/metrics").body, as: UTF8.self)
            #expect(metrics.contains(#"paywarden_hsm_failures_on_input_total{operation="ecdh-kdf"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"paywarden_hsm_failures_on_input_total{operation="rsa-oaep-decrypt"} 1"#))
            #expect(try await server.send(body: try server.ecToken()).status == 200)
            #expect(try await server.send(body: try server.rsaToken()).status == 200)
        }
    }

    /// A single lost session or login is re-established inside the request: the caller never sees it.
    @Test(arguments: dispatches, [ReturnValue.sessionHandleInvalid, .userNotLoggedIn, .deviceRemoved])
    func aSingleLostLoginIsInvisible(_ dispatch: HSMDispatch, _ value: ReturnValue) async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withServer(device, dispatch) { server in
            #expect(try await server.waitForReadiness(200))
            try device.fail("C_DeriveKey", with: value, times: 1)
            let reply = try await server.send(body: try server.ecToken())
            #expect(reply.status == 200, "\(value.name): \(reply.text)")
        }
    }

    /// A re-login that fails after a recycle leaves the HSM logged out: before the fix, requests
    /// then ran on unauthenticated sessions that see no private keys, and were refused as
    /// `unknown_public_key_hash` with their transaction ids burned.
    @Test(arguments: dispatches)
    func aFailedReloginIsUnavailableNotAnUnknownKey(_ dispatch: HSMDispatch) async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withServer(device, dispatch) { server in
            #expect(try await server.waitForReadiness(200))
            try device.fail("C_Login", with: .deviceError, times: 1)
            await #expect(throws: PKCS11Error.self) { try await server.server.hsm.recycle() }
            #expect(!server.server.hsm.isLoggedIn)
            let token = try server.ecToken()
            let first = try await server.send(body: token)
            #expect(first.status == 200 || first.status == 503, "\(first.text)")
            #expect(first.errorCode != "unknown_public_key_hash")
            if first.status == 503 {
                #expect(first.header("Retry-After") == "1")
                #expect(try await server.waitForReadiness(200))
                #expect(try await server.send(body: token).status == 200)
            }
            #expect(try await server.send(body: token).errorCode == "replayed_transaction")
        }
    }

    /// The HSM disappears in the middle of a load and comes back: every request is 200 or a 503
    /// with Retry-After, the service recovers without a restart, every refused token decrypts on
    /// its retry, and every token decrypts exactly once.
    @Test(arguments: dispatches)
    func theHSMDisappearsMidLoadAndComesBack(_ dispatch: HSMDispatch) async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withServer(device, dispatch) { server in
            #expect(try await server.waitForReadiness(200))
            let tokens = try (0..<240).map { _ in try server.ecToken() }
            let sent = Counter()
            let replies = try await withThrowingTaskGroup(of: [(Int, TestServer.Reply)].self) { group in
                for client in 0..<6 {
                    group.addTask {
                        var replies: [(Int, TestServer.Reply)] = []
                        for index in stride(from: client, to: tokens.count, by: 6) {
                            replies.append((index, try await server.send(body: tokens[index])))
                            sent.increment()
                        }
                        return replies
                    }
                }
                group.addTask {
                    while sent.value < 60 { try await Task.sleep(for: .milliseconds(5)) }
                    device.removeDevice()
                    try await Task.sleep(for: .milliseconds(800))
                    device.restoreDevice()
                    return []
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(replies.count == tokens.count)
            let statuses = Dictionary(grouping: replies, by: { $0.1.status }).mapValues(\.count)
            #expect(Set(statuses.keys).isSubset(of: [200, 503]), "\(statuses)")
            let refused = replies.filter { $0.1.status == 503 }
            #expect(!refused.isEmpty, "the removal must have been noticed: \(statuses)")
            #expect(refused.allSatisfy { $0.1.header("Retry-After") == "1" })
            #expect(try await server.waitForReadiness(200), "recovery without a restart")
            for (index, _) in refused {
                let retried = try await server.send(body: tokens[index])
                #expect(retried.status == 200, "a refused token must decrypt on its retry: \(retried.text)")
            }
            // Every token has now been decrypted once; none may be decrypted again.
            for token in tokens.prefix(40) + refused.prefix(20).map({ tokens[$0.0] }) {
                #expect(try await server.send(body: token).errorCode == "replayed_transaction")
            }
            let metrics = String(decoding: try await server.operations("/metrics").body, as: UTF8.self)
            #expect(!metrics.contains("status=\"500\""))
            print("HSM removed mid-load: \(tokens.count) tokens, \(statuses[200] ?? 0) × 200 and \(refused.count) × 503 during the load;")
            print("  \(refused.count) retries × 200 after recovery, recycles \(server.server.hsm.recycles)")
        }
    }

    /// An HSM call that never returns: the request meets its deadline with a 503, readiness falls
    /// while every worker is stuck, and after the HSM answers again both tokens decrypt.
    @Test func aHangMeetsTheDeadline() async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withServer(device, .pool, shortDeadlines: true) { server in
            #expect(try await server.waitForReadiness(200))
            let tokens = try [server.ecToken(), server.ecToken()]
            try device.hang("C_DeriveKey")
            let clock = ContinuousClock()
            let start = clock.now
            let replies = try await withThrowingTaskGroup(of: TestServer.Reply.self) { group in
                for token in tokens { group.addTask { try await server.send(body: token) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(clock.now - start < .seconds(3), "the deadline is 500 ms")
            for reply in replies {
                #expect(reply.status == 503, "\(reply.text)")
                #expect(reply.errorCode == "hsm_unavailable")
                #expect(reply.header("Retry-After") == "1")
            }
            try await device.waitUntilHung("C_DeriveKey", calls: 2)
            #expect(try await server.waitForReadiness(503, seconds: 5), "both workers are stuck: not ready")
            try device.release()
            #expect(try await server.waitForReadiness(200))
            for token in tokens {
                let retried = try await server.send(body: token)
                #expect(retried.status == 200, "the abandoned attempt gave its transaction id back: \(retried.text)")
            }
        }
    }

    /// Inline, a call that never returns holds the thread that made it: its request waits. The
    /// watchdog turns dispatch to the pool at the deadline, so the next request meets its deadline
    /// with a 503 (metrics say `pool`), readiness falls while the call is stuck, and after the HSM
    /// answers again the stuck request is a 503 and both tokens decrypt.
    @Test func aHangInlineTurnsDispatchToThePool() async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withServer(device, .inline, shortDeadlines: true) { server in
            #expect(try await server.waitForReadiness(200))
            let tokens = try [server.ecToken(), server.ecToken()]
            try device.hang("C_DeriveKey")
            let stuck = Task { try await server.send(body: tokens[0]) }
            try await device.waitUntilHung("C_DeriveKey", calls: 1)
            let clock = ContinuousClock()
            let start = clock.now
            while server.server.hsm.dispatch == .inline && clock.now - start < .seconds(5) { try await Task.sleep(for: .milliseconds(20)) }
            #expect(server.server.hsm.dispatch == .pool, "the watchdog turned inline dispatch off")

            let sent = clock.now
            let next = try await server.send(body: tokens[1])
            #expect(clock.now - sent < .seconds(3), "the deadline is 500 ms")
            #expect(next.status == 503 && next.errorCode == "hsm_unavailable", "\(next.text)")
            #expect(next.header("Retry-After") == "1")
            #expect(try await server.waitForReadiness(503, seconds: 5), "a call is stuck: not ready")
            let metrics = String(decoding: try await server.operations("/metrics").body, as: UTF8.self)
            #expect(
                metrics.contains("paywarden_hsm_dispatch{mode=\"pool\"} 1"),
                "\(metrics.split(separator: "\n").filter { $0.contains("dispatch") })")

            try device.release()
            let late = try await stuck.value
            #expect(late.status == 503 && late.errorCode == "hsm_unavailable", "its deadline passed: \(late.text)")
            #expect(try await server.waitForReadiness(200))
            for token in tokens {
                let retried = try await server.send(body: token)
                #expect(retried.status == 200, "the abandoned attempts gave their transaction ids back: \(retried.text)")
            }
            #expect(server.logs.text.contains("overran its deadline"))
        }
    }

    /// A wrong PIN: the service stays not ready and says why, presents the PIN once, and picks up
    /// the corrected file without a restart.
    @Test(arguments: dispatches)
    func aWrongPINCausesNoLoginStorm(_ dispatch: HSMDispatch) async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withServer(device, dispatch) { server in
            #expect(try await server.waitForReadiness(200))
            let pinFile = URL(fileURLWithPath: server.token.pinFile)
            let correct = try Data(contentsOf: pinFile)
            try OwnerOnlyFile.write("wrong-pin\n", to: pinFile.path)
            let logins = try device.calls("C_Login")
            // A power cycle: the login is lost, and the maintenance loop must log in again.
            device.removeDevice()
            device.restoreDevice()
            #expect(try await server.waitForReadiness(503))
            try await Task.sleep(for: .seconds(3))
            let readiness = try await server.operations("/readyz")
            #expect(readiness.text.contains("hsm_pin_refused"), "\(readiness.text)")
            #expect(try device.calls("C_Login") - logins == 1, "the refused PIN was presented once in 3 s, at most")
            #expect(server.logs.text.contains("PIN"))

            try OwnerOnlyFile.write(correct, to: pinFile.path)
            #expect(try await server.waitForReadiness(200, seconds: 5), "the corrected PIN is used without a restart")
            #expect(try device.calls("C_Login") - logins == 2)
            #expect(try await server.send(body: try server.ecToken()).status == 200)
        }
    }

    /// Recycling the module again and again under load fails no request.
    @Test(arguments: dispatches)
    func recyclingUnderLoadFailsNoRequest(_ dispatch: HSMDispatch) async throws {
        let device = try FaultInjectingPKCS11.make()
        try await withServer(device, dispatch) { server in
            #expect(try await server.waitForReadiness(200))
            try device.addLatency("C_DeriveKey", microseconds: 500)
            let done = Counter()
            let recycles = server.server.hsm.recycles
            // The load lasts until the module has been recycled at least five times under it, however
            // fast the machine answers (40 requests per client at least, 400 at most).
            let replies = try await withThrowingTaskGroup(of: [TestServer.Reply].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var replies: [TestServer.Reply] = []
                        while replies.count < 40 || (server.server.hsm.recycles - recycles < 5 && replies.count < 400) {
                            replies.append(try await server.send(body: try server.ecToken()))
                        }
                        done.increment()
                        return replies
                    }
                }
                group.addTask {
                    while done.value < 4 {
                        try await server.server.hsm.recycle()
                        try await Task.sleep(for: .milliseconds(30))
                    }
                    return []
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(replies.count >= 160)
            #expect(replies.allSatisfy { $0.status == 200 }, "\(replies.filter { $0.status != 200 }.map(\.text).prefix(3))")
            #expect(server.server.hsm.recycles - recycles >= 5, "\(server.server.hsm.recycles - recycles) recycles under the load")
            print("recycling under load: \(replies.count) requests, all 200, \(server.server.hsm.recycles - recycles) recycles")
        }
    }
}

/// Both dispatches, for the tests that run with each.
private let dispatches: [HSMDispatch] = [.inline, .pool]

/// A server whose HSM is `device`, calls dispatched as `dispatch`; with `shortDeadlines`, an HSM
/// operation waits 500 ms and the health check 300 ms, for the hang tests.
private func withServer(
    _ device: FaultInjectingPKCS11, _ dispatch: HSMDispatch, shortDeadlines: Bool = false, _ body: (TestServer) async throws -> Void
) async throws {
    try await withServer({
        $0.hsm.modulePath = device.modulePath
        $0.hsm.dispatch = dispatch
        if shortDeadlines {
            $0.hsm.operationTimeout = .milliseconds(500)
            $0.hsm.healthCheckTimeout = .milliseconds(300)
        }
    }) { server in
        #expect(server.server.hsm.dispatch == dispatch)
        try await body(server)
    }
}

/// A count shared by the tasks of one test.
private final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .relaxed) }
    func increment() { count.add(1, ordering: .relaxed) }
}
