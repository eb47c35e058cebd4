import AsyncHTTPClient
import Foundation
import KeyCustody
import Logging
import NIOCore
import NIOHTTP1
import PaywardenConfiguration
import PaywardenDatabase
import PaywardenPrimitives
import PaywardenSandbox
import PaywardenServer
import PaywardenServices
import PaywardenStorage

#if canImport(Glibc)
    import Glibc
#endif

/// `paywarden serve` as separate processes, as an operator runs it: one SoftHSM token with a
/// certified EC merchant key, the test PKI's root as the trust anchor, an API key, and the
/// database each start is given. For what only processes show: two instances on one database,
/// a restart, `kill -9`.
public struct ServeProcesses: Sendable {
    public let admin: AdminTestEnvironment
    public let merchant: MerchantKey
    /// The merchant key's record, written into each database a start is given, as the admin
    /// command that created the key would have written it there.
    let keyRecords: [StoredKeyRecord]
    public let forge: TokenForge
    /// Decrypts (organisation-less, as a payment service's key is).
    public let apiKey: String
    /// Redeems registrations of the organisation ``organization``'s paypages and detokenizes its tokens.
    public let redeemKey: String
    let environment: [String: String]

    /// The organisation of ``redeemKey`` and of the paypage ``createPaypage(_:database:)`` makes.
    public static let organization: OrganizationID = "instances"

    public static func make() async throws -> ServeProcesses {
        let admin = try await AdminTestEnvironment.make()
        let hsm = try await admin.token.open()
        let merchant: MerchantKey
        let records = InMemoryDatabase()
        do {
            let store = MerchantKeyStore(hsm: hsm, records: records, certificateIssuers: TestCertificateAuthority.shared.issuers)
            merchant = try await store.certifiedProcessingKey(merchantID: "merchant.com.example.instances", .ec)
            await hsm.close()
        } catch {
            await hsm.close()
            throw error
        }
        let root = try admin.write(DecryptionTestEnvironment.sharedPKI.rootDER, named: "test-root.der")
        let (apiKey, entry) = APIKey.generate(name: "payments", scopes: [.decrypt])
        let (redeemKey, redeemEntry) = APIKey.generate(
            name: "merchant-server", scopes: [.redeem, .detokenize], organization: organization)
        typealias C = SettingCatalog
        var environment = admin.cli.environment
        environment[C.trustRoots.environmentName] = root
        environment[C.apiKeys.environmentName] = entry + "," + redeemEntry
        environment[C.logLevel.environmentName] = "info"
        environment[C.hsmWorkers.environmentName] = "1"
        // One loopback address registers for every simulated app.
        environment[C.eProtectRatePerAddress.environmentName] = "100000"
        environment[C.eProtectRatePerPaypage.environmentName] = "100000"
        // No balancer in front unless a test puts one there: SIGTERM stops at once.
        environment[C.shutdownDrainSeconds.environmentName] = "0"
        return ServeProcesses(
            admin: admin, merchant: merchant, keyRecords: try await records.keyRecords(),
            forge: TokenForge(pki: DecryptionTestEnvironment.sharedPKI), apiKey: apiKey,
            redeemKey: redeemKey, environment: environment)
    }

    /// A new EC_v1 token for the merchant key (a fresh transaction id each time).
    public func token() throws -> [UInt8] {
        try forge.ecToken(to: merchant, payload: PaymentPayloads.threeDSecure())
    }

    /// The environment for a SQLite database at `path`.
    public func sqlite(_ path: String) -> [String: String] {
        [SettingCatalog.databaseURL.environmentName: "sqlite:" + path]
    }

    /// The environment for a database on the test cluster (password from a file, migrated at start).
    public func postgres(_ cluster: TestPostgres, database: String) -> [String: String] {
        [
            SettingCatalog.databaseURL.environmentName: cluster.url(database: database),
            SettingCatalog.databasePasswordFile.environmentName: cluster.passwordFile,
            SettingCatalog.databaseAutoMigrate.environmentName: "true",
        ]
    }

    /// `paywarden paypages create` for the merchant key's identifier, as an admin runs it before
    /// apps register cards (the vault's keys are made in the HSM then, when it has none).
    public func createPaypage(_ id: String, database: [String: String]) throws {
        let created = try run(
            [
                "paypages", "create", "--paypage-id", id, "--organization", Self.organization.rawValue, "--merchant-id",
                merchant.merchantID ?? "",
            ], database: database)
        guard created.status == 0 else { throw TestServerStartError(reason: "paypages create: \(created.stderr)") }
    }

    /// What an instance acknowledged for a token: its decryption, or its registration under an ID.
    public enum Acknowledged: Sendable, Hashable {
        case decrypted
        case registered(id: String)
    }

    /// Posts `token` to the instance at loopback `port`: decrypted, or registered with `paypage`
    /// (eProtect's form) when one is named. Nil unless the answer was 200 and read whole.
    public func post(_ token: [UInt8], to port: Int, registeringWith paypage: String? = nil) async -> Acknowledged? {
        guard let paypage else {
            let reply = try? await ServeProcess.send(.POST, "/v1/payment-tokens/decrypt", port: port, apiKey: apiKey, body: token)
            return reply?.status == 200 ? .decrypted : nil
        }
        guard let form = try? EProtectForms.form(token: token, paypageID: paypage, reportGroup: "instances"),
            let reply = try? await ServeProcess.send(.POST, "/eProtect/paypage", port: port, apiKey: apiKey, body: form),
            reply.status == 200,
            let answer = try? JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any],
            let id = answer["paypageRegistrationId"] as? String
        else { return nil }
        return .registered(id: id)
    }

    /// Redeems registration `id` at the instance at loopback `port` (the body form).
    public func redeem(_ id: String, at port: Int) async throws -> TestServer.Reply {
        try await ServeProcess.send(
            .POST, "/v1/registrations/redeem", port: port, apiKey: redeemKey, body: Array(#"{"registrationId":"\#(id)"}"#.utf8))
    }

    /// Detokenizes high-value token `token` at the instance at loopback `port` (the body form).
    public func detokenize(_ token: String, at port: Int) async throws -> TestServer.Reply {
        try await ServeProcess.send(
            .POST, "/v1/tokens/detokenize", port: port, apiKey: redeemKey, body: Array(#"{"token":"\#(token)"}"#.utf8))
    }

    /// Runs `paywarden ARGUMENTS` to completion with this environment and `database`.
    public func run(_ arguments: [String], database: [String: String]) throws -> PaywardenProcess.Output {
        try PaywardenProcess(environment: environment.merging(database) { $1 }).run(arguments)
    }

    /// Starts `paywarden serve` on `port` (default: a free one) with `database` and further
    /// `settings`, and waits until `/readyz` answers 200. `recordingKeys`: the merchant key's
    /// record is written first (false for a database that must already hold it: a copy, a restore).
    public func start(
        database: [String: String], settings: [String: String] = [:], port: Int? = nil, recordingKeys: Bool = true
    ) async throws -> ServeProcess {
        let port = try port ?? TestPostgres.freePort()
        let environment = environment.merging(database) { $1 }.merging(settings) { $1 }
        if recordingKeys { try await recordKeys(environment) }
        return try await ServeProcess.launch(environment: environment, port: port, apiKey: apiKey, log: admin.home + "/serve-\(port).log")
    }

    /// Writes the merchant key's record into the database `environment` names (migrated first).
    private func recordKeys(_ environment: [String: String]) async throws {
        let settings = try await PaywardenSettings.load(environment: environment)
        let connection = try DatabaseConnection.open(settings.database, logger: Logger(label: "serve-processes"))
        try await connection.withServices { _ in
            _ = try await connection.prepareSchema(migratingAutomatically: true)
            for record in keyRecords { _ = try await connection.keyRecords.insertKeyRecord(record) }
        }
    }
}

/// One running `paywarden serve`, killed when the test ends if it still runs. (`Process` is not
/// `Sendable`; this only reads its pid and waits for it, which Foundation allows from any thread.)
public final class ServeProcess: @unchecked Sendable {
    let process: Process
    public let port: Int
    let apiKey: String
    let logPath: String

    init(process: Process, port: Int, apiKey: String, log: String) {
        self.process = process
        self.port = port
        self.apiKey = apiKey
        self.logPath = log
        TestResources.track(cleanup: { [process] in
            if process.isRunning {
                Glibc.kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        })
    }

    /// Starts `paywarden serve` with `environment` on loopback `port`, its output appended to `log`
    /// (a restart on the same port keeps the log of the run before), and waits until `/readyz`
    /// answers 200.
    static func launch(environment: [String: String], port: Int, apiKey: String, log: String) async throws -> ServeProcess {
        var environment = environment
        environment[SettingCatalog.listen.environmentName] = "127.0.0.1:\(port)"
        if !FileManager.default.fileExists(atPath: log) { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try output.seekToEnd()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: PaywardenProcess.executable)
        process.arguments = ["serve"]
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try? output.close()
        let serve = ServeProcess(process: process, port: port, apiKey: apiKey, log: log)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, process.isRunning {
            if (try? await serve.send(.GET, "/readyz"))?.status == 200 { return serve }
            try await Task.sleep(for: .milliseconds(100))
        }
        let exited = process.isRunning ? "" : " (it exited with status \(process.terminationStatus))"
        serve.kill(SIGKILL)
        throw TestServerStartError(reason: "paywarden serve did not become ready\(exited): \(serve.log.suffix(3000))")
    }

    /// What the process wrote so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    public func decrypt(_ token: [UInt8]) async throws -> TestServer.Reply {
        try await send(.POST, "/v1/payment-tokens/decrypt", body: token)
    }

    /// - Parameter newConnection: on a connection of its own, closed after it (the client pools
    ///   connections otherwise), as a new client's request arrives.
    public func send(_ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, newConnection: Bool = false) async throws
        -> TestServer.Reply
    {
        try await Self.send(method, path, port: port, apiKey: apiKey, body: body, newConnection: newConnection)
    }

    /// A request to whatever listens on loopback `port` (an instance, or a load balancer in front
    /// of several) with the API key.
    public static func send(
        _ method: HTTPMethod, _ path: String, port: Int, apiKey: String, body: [UInt8]? = nil, newConnection: Bool = false
    ) async throws -> TestServer.Reply {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(apiKey)")
        if newConnection { request.headers.add(name: "Connection", value: "close") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await TestServer.client.execute(request, timeout: .seconds(30))
        let collected = try await response.body.collect(upTo: 1 << 20)
        return TestServer.Reply(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: Array(buffer: collected))
    }

    /// Sends `signal` and waits for the process to end.
    public func kill(_ signal: Int32) {
        Glibc.kill(process.processIdentifier, signal)
        process.waitUntilExit()
    }

    /// SIGTERM: finishes in-flight requests, then exits.
    public func stop() {
        kill(SIGTERM)
    }

    /// Sends `signal` without waiting.
    public func signal(_ signal: Int32) {
        Glibc.kill(process.processIdentifier, signal)
    }

    /// Waits (off the caller's thread) for the process to end; its exit status, or the signal's
    /// number plus 128 when a signal ended it.
    public func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [process] in
                process.waitUntilExit()
                let status = process.terminationStatus
                continuation.resume(returning: process.terminationReason == .uncaughtSignal ? 128 + status : status)
            }
        }
    }
}
