import Foundation
import PaywardenConfiguration
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

/// One HSM call that does not return, with inline dispatch on two event loops: it delays its own
/// request and nobody else's (a real `paywarden serve` on the fault-injecting module, a SQLite file).
@Suite(.releasesTestResources)
struct StuckHSMCallTests {
    @Test("inline on two event loops, a hung C_DeriveKey delays only its own request: 20 new /healthz and 20 decrypts in 1 s")
    func aHungCallDelaysOnlyItsOwnRequest() async throws {
        let processes = try await ServeProcesses.make()
        let control = processes.admin.home + "/pwfault-control"
        try Self.write("", to: control)
        typealias C = SettingCatalog
        var environment = processes.sqlite(processes.admin.home + "/db/paywarden.sqlite")
        environment.merge(FaultInjectingPKCS11.environment(controlFile: control)) { $1 }
        environment[C.pkcs11Module.environmentName] = FaultInjectingPKCS11.builtLibrary
        environment[C.eventLoopThreads.environmentName] = "2"
        environment[C.hsmDispatch.environmentName] = "inline"
        // Far beyond the test: the stuck call stays an inline call throughout.
        environment[C.hsmOperationTimeoutMilliseconds.environmentName] = "20000"
        let serve = try await processes.start(database: environment)
        let tokens = try (0..<22).map { _ in try processes.token() }
        #expect(try await serve.decrypt(tokens[21]).status == 200, "a derive before the hang")

        // The next derive hangs for 4 s, then goes on to SoftHSM.
        try Self.write("C_DeriveKey=hang:4000:1", to: control)
        let clock = ContinuousClock()
        let answered = Atomic<Bool>(false)
        let stuck = Task {
            let reply = try await serve.send(.POST, "/v1/payment-tokens/decrypt", body: tokens[0], newConnection: true)
            answered.store(true, ordering: .relaxed)
            return reply
        }
        try await Task.sleep(for: .milliseconds(500))
        let answeredEarly = answered.load(ordering: .relaxed)
        #expect(!answeredEarly, "the hung request was answered before its call returned")

        let start = clock.now
        let replies = try await withThrowingTaskGroup(of: (String, Int, Duration).self) { group in
            for index in 0..<20 {
                group.addTask {
                    let reply = try await serve.send(.GET, "/healthz", newConnection: true)
                    return ("healthz", reply.status, clock.now - start)
                }
                group.addTask {
                    let reply = try await serve.send(.POST, "/v1/payment-tokens/decrypt", body: tokens[index + 1], newConnection: true)
                    return ("decrypt", reply.status, clock.now - start)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let slowest = replies.map(\.2).max() ?? .zero
        print("20 /healthz and 20 decrypts beside a hung derive: all answered in \(slowest), statuses \(replies.map(\.1))")
        #expect(replies.count == 40 && replies.allSatisfy { $0.1 == 200 }, "\(replies)")
        #expect(slowest < .seconds(1), "the slowest answer took \(slowest): \(replies.filter { $0.2 >= .seconds(1) })")

        let late = try await stuck.value
        #expect(late.status == 200, "the hung call's own request is answered once the call returns: \(late.text)")
        #expect(clock.now - start > .seconds(3), "answered before its call returned")
        serve.stop()
    }

    /// The fault-injecting module re-reads its control file when it changes: written whole, then renamed over.
    private static func write(_ specification: String, to path: String) throws {
        let temporary = path + ".new"
        try Data(specification.utf8).write(to: URL(fileURLWithPath: temporary))
        _ = rename(temporary, path)
    }
}
