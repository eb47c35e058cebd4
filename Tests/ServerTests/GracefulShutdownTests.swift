import Foundation
import PaywardenConfiguration
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// SIGTERM as an orchestrator sends it: the drain (not ready, still serving, every connection
/// closed after its response), then the listeners close, in-flight requests finish and the
/// process exits 0; and a rolling restart of two instances behind HAProxy in which no request fails.
@Suite(.releasesTestResources)
struct GracefulShutdownTests {
    /// Twice HAProxy's detection here (two checks 250 ms apart) and more, for a loaded machine.
    static let drain = [
        SettingCatalog.shutdownDrainSeconds.environmentName: "3", SettingCatalog.shutdownDeadlineSeconds.environmentName: "10",
    ]

    @Test("SIGTERM: /readyz 503 shutting_down at once, decrypts still answered with Connection: close, then exit 0")
    func drainThenExit() async throws {
        let processes = try await ServeProcesses.make()
        let database = processes.sqlite(processes.admin.home + "/db/paywarden.sqlite")
        let server = try await processes.start(
            database: database, settings: [SettingCatalog.shutdownDrainSeconds.environmentName: "5"])
        let before = try await server.decrypt(try processes.token())
        #expect(before.status == 200 && before.header("Connection") != "close")
        let clock = ContinuousClock()
        let signalled = clock.now
        server.signal(SIGTERM)
        let exit = Task { await server.exitStatus() }
        // Not ready at once; then serving through the drain (stopping 2 s before its end, so a
        // slow answer on a loaded machine still arrives before the listener closes).
        var readiness = try await server.send(.GET, "/readyz")
        while readiness.status == 200, clock.now - signalled < .seconds(2) { readiness = try await server.send(.GET, "/readyz") }
        let notReadyAfter = clock.now - signalled
        #expect(readiness.status == 503 && readiness.text.contains("shutting_down"), "\(readiness.status) \(readiness.text)")
        var servedWhileDraining = 0
        while clock.now - signalled < .seconds(3) {
            let reply = try await server.decrypt(try processes.token())
            #expect(reply.status == 200 && reply.header("Connection") == "close", "\(reply.status) \(reply.text)")
            servedWhileDraining += 1
        }
        #expect(notReadyAfter < .seconds(1), "not ready after \(notReadyAfter)")
        #expect(servedWhileDraining > 0)
        #expect(await exit.value == 0, "\(server.log.suffix(2000))")
        let stopped = clock.now - signalled
        #expect(stopped >= .seconds(5) && stopped < .seconds(15), "stopped after \(stopped)")
        #expect(server.log.contains("shutting down: /readyz answers 503"))
    }

    @Test("a request still arriving at the deadline: the process ends with status 1 when the deadline passes, not before")
    func deadline() async throws {
        let processes = try await ServeProcesses.make()
        let database = processes.sqlite(processes.admin.home + "/db/paywarden.sqlite")
        let server = try await processes.start(
            database: database,
            settings: [
                SettingCatalog.shutdownDeadlineSeconds.environmentName: "2",
                SettingCatalog.requestReadTimeoutSeconds.environmentName: "60", SettingCatalog.idleTimeoutSeconds.environmentName: "60",
            ])
        // A request whose body never arrives whole: in flight until its read timeout, well past the deadline.
        let connection = try RawTCPConnection(port: server.port)
        defer { connection.close() }
        try connection.send(
            "POST /v1/payment-tokens/decrypt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(processes.apiKey)\r\n"
                + "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"data\":")
        try await Task.sleep(for: .milliseconds(200))
        let clock = ContinuousClock()
        let signalled = clock.now
        server.signal(SIGTERM)
        let status = await server.exitStatus()
        let stopped = clock.now - signalled
        #expect(status == 1, "\(server.log.suffix(2000))")
        #expect(stopped >= .seconds(2) && stopped < .seconds(10), "stopped after \(stopped)")
        #expect(server.log.contains("the shutdown deadline passed"))
    }

    @Test("rolling restart of two instances on one PostgreSQL behind HAProxy: every request answered 200")
    func rollingRestart() async throws {
        try #require(HAProxyBalancer.isInstalled, "HAProxy is not installed: `make test` installs it (apt-get install haproxy)")
        let cluster = try TestPostgres.shared()
        let processes = try await ServeProcesses.make()
        let database = processes.postgres(cluster, database: try cluster.database())
        var instances = [
            try await processes.start(database: database, settings: Self.drain),
            try await processes.start(database: database, settings: Self.drain),
        ]
        let balancer = try HAProxyBalancer.start(backends: instances.map(\.port))
        for index in instances.indices { try await balancer.wait(for: index, to: "UP") }

        let load = LoadRecord()
        let senders = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        while !load.stop.load(ordering: .relaxed) {
                            let token = try processes.token()
                            let outcome: String
                            do {
                                let reply = try await ServeProcess.send(
                                    .POST, "/v1/payment-tokens/decrypt", port: balancer.port, apiKey: processes.apiKey, body: token)
                                outcome = reply.status == 200 ? "200" : "\(reply.status) \(reply.errorCode ?? reply.text)"
                            } catch {
                                outcome = "error \(error)"
                            }
                            load.outcomes.withLock { $0[outcome, default: 0] += 1 }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await Task.sleep(for: .seconds(1))
        var markedDown: [Duration] = []
        for index in instances.indices {
            let instance = instances[index]
            instance.signal(SIGTERM)
            markedDown.append(try await balancer.wait(for: index, to: "DOWN"))
            #expect(await instance.exitStatus() == 0, "\(instance.log.suffix(2000))")
            instances[index] = try await processes.start(database: database, settings: Self.drain, port: instance.port)
            try await balancer.wait(for: index, to: "UP")
            try await Task.sleep(for: .milliseconds(500))
        }
        load.stop.store(true, ordering: .relaxed)
        try await senders.value
        let outcomes = load.outcomes.withLock { $0 }
        let total = outcomes.values.reduce(0, +)
        print("rolling restart: \(total) requests, outcomes \(outcomes); HAProxy marked each instance down after \(markedDown)")
        #expect(outcomes.keys.sorted() == ["200"], "\(outcomes)")
        #expect(total >= 100, "only \(total) requests during the restart")
        // The drain must outlast the balancer's detection: here two checks 250 ms apart.
        #expect(markedDown.allSatisfy { $0 < .seconds(3) }, "\(markedDown)")
        balancer.stop()
        for instance in instances { instance.stop() }
    }

    private final class LoadRecord: Sendable {
        let outcomes = Mutex<[String: Int]>([:])
        let stop = Atomic<Bool>(false)
    }
}
