import ApplePay
import AsyncHTTPClient
import Crypto
import Foundation
import KeyCustody
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import PKCS11
import PaywardenConfiguration
import PaywardenDatabase
import PaywardenSandbox
import PaywardenServer
import PaywardenServices
import ServiceLifecycle
import Synchronization
import Vault

/// Runs `body` against a real Paywarden server on loopback (see ``TestServer``) and stops the
/// server and destroys its token afterwards, whether `body` returns or throws.
public func withServer<R: Sendable>(
    _ adjust: @Sendable (inout ServerConfiguration) throws -> Void = { _ in },
    prepare: @Sendable (MerchantKeyStore) async throws -> Void = { _ in },
    _ body: (TestServer) async throws -> R
) async throws -> R {
    try await withServer(
        adjust,
        configuringWithKeys: { store in
            try await prepare(store)
            return { _ in }
        }, body)
}

/// ``withServer(_:prepare:_:)`` whose configuration also depends on the keys an admin made:
/// `configuringWithKeys` makes them and returns the adjustment that names them (a key id in a
/// setting), applied before the server starts.
public func withServer<R: Sendable>(
    _ adjust: @Sendable (inout ServerConfiguration) throws -> Void = { _ in },
    configuringWithKeys: @Sendable (MerchantKeyStore) async throws -> @Sendable (inout ServerConfiguration) throws -> Void,
    _ body: (TestServer) async throws -> R
) async throws -> R {
    let server = try await TestServer.start(adjust, prepare: configuringWithKeys)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// A real Paywarden server on loopback, on a fresh SoftHSM token with an EC and an RSA merchant
/// key certified by the test CA, trusting the test PKI, with a captured log. Start it through
/// ``withServer(_:_:)``, which always stops it.
public final class TestServer: Sendable {
    public let token: TestToken
    public let server: PaywardenServer
    public let port: Int
    /// The operations listener's port; the API port when operations share it.
    public let operationsPort: Int
    public let scheme: String
    public let forge: TokenForge
    public let ecMerchant: MerchantKey
    public let rsaMerchant: MerchantKey
    /// A key with the `decrypt` scope.
    public let decryptKey: String
    /// A key without the `decrypt` scope.
    public let redeemOnlyKey: String
    /// `redeem` and `detokenize` for the organisation `example`, whose paypage `examplePaypage`
    /// allows the EC and RSA merchants' keys.
    public let vaultKey: String
    /// `redeem` and `detokenize` for another organisation, `rival`, whose paypage `rivalPaypage`
    /// allows only a merchant identifier with no key here.
    public let rivalKey: String
    /// `decrypt` for the organisation `example`: opens its merchants' tokens only.
    public let exampleDecryptKey: String
    /// `decrypt` for the organisation `rival`, none of whose merchants has a key here.
    public let rivalDecryptKey: String
    public let logs: CapturedLog
    private let serverTask: Task<Void, any Error>

    /// The test process's HTTP client: it trusts any server certificate (the tests make their own).
    public static let client = HTTPClient(
        eventLoopGroupProvider: .singleton,
        configuration: {
            var configuration = HTTPClient.Configuration()
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = .none
            configuration.tlsConfiguration = tls
            // The client plays an outside caller: its own spans (AsyncHTTPClient's, with the full
            // URL) would land in the tracing test's collector as if the server had sent them.
            configuration.tracing.tracer = nil
            return configuration
        }())

    /// `prepare` runs as an admin process would before the service starts (more keys), so the
    /// token's objects are not written while the service reads them.
    static func start(
        _ adjust: @Sendable (inout ServerConfiguration) throws -> Void,
        prepare: @Sendable (MerchantKeyStore) async throws -> @Sendable (inout ServerConfiguration) throws -> Void
    ) async throws -> TestServer {
        let token = try await TestToken.make(labelPrefix: "server")
        do {
            return try await TestServer(token: token, adjust, prepare: prepare)
        } catch {
            token.destroy()
            throw error
        }
    }

    private init(
        token: TestToken, _ adjust: @Sendable (inout ServerConfiguration) throws -> Void,
        prepare: @Sendable (MerchantKeyStore) async throws -> @Sendable (inout ServerConfiguration) throws -> Void
    ) async throws {
        self.token = token
        forge = TokenForge(pki: DecryptionTestEnvironment.sharedPKI)
        let (decryptKey, decryptEntry) = APIKey.generate(name: "payments", scopes: [.decrypt])
        let (redeemKey, redeemEntry) = APIKey.generate(name: "checkout", scopes: [.redeem], organization: "example")
        let (vaultKey, vaultEntry) = APIKey.generate(name: "merchant-server", scopes: [.redeem, .detokenize], organization: "example")
        let (rivalKey, rivalEntry) = APIKey.generate(name: "rival-server", scopes: [.redeem, .detokenize], organization: "rival")
        self.decryptKey = decryptKey
        self.redeemOnlyKey = redeemKey
        self.vaultKey = vaultKey
        self.rivalKey = rivalKey
        let (exampleDecryptKey, exampleDecryptEntry) = APIKey.generate(
            name: "example-payments", scopes: [.decrypt], organization: "example")
        let (rivalDecryptKey, rivalDecryptEntry) = APIKey.generate(name: "rival-payments", scopes: [.decrypt], organization: "rival")
        self.exampleDecryptKey = exampleDecryptKey
        self.rivalDecryptKey = rivalDecryptKey
        // The catalog's defaults (no environment, no file), then the test token and test values.
        var configuration = try ServerConfiguration(settings: await PaywardenSettings.load(environment: [:]))
        configuration.hsm = token.configuration
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.apiKeys = APIKeyRegistry(
            keys: try [decryptEntry, redeemEntry, vaultEntry, rivalEntry, exampleDecryptEntry, rivalDecryptEntry].map { entry in
                try APIKey(entry: entry)
            })
        // The registration limits of production would throttle the tests' bursts.
        configuration.eProtectRatePerAddress = 100_000
        configuration.eProtectRatePerPaypage = 100_000
        configuration.trustAnchors = TrustAnchors(certificates: [DecryptionTestEnvironment.sharedPKI.root], source: "test root")
        configuration.keyRefreshInterval = .milliseconds(250)
        // A database of its own (a real SQLite file), removed when the test ends.
        let databaseDirectory = NSTemporaryDirectory() + "paywarden-db-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: databaseDirectory)
        configuration.database.location = .sqlite(path: databaseDirectory + "/paywarden.sqlite")
        try adjust(&configuration)
        if configuration.operationsListen != nil { configuration.operationsListen = ListenAddress(host: "127.0.0.1", port: 0) }

        // Keys are set up by an admin process before the server starts, as in production: in the
        // HSM, with their records in the database the server is given.
        let admin = try await token.open()
        do {
            let connection = try DatabaseConnection.open(configuration.database, logger: Logger(label: "paywarden-test-admin"))
            let configureWithKeys: @Sendable (inout ServerConfiguration) throws -> Void
            (ecMerchant, rsaMerchant, configureWithKeys) = try await connection.withServices { _ in
                _ = try await connection.prepareSchema(migratingAutomatically: true)
                let store = MerchantKeyStore(
                    hsm: admin, records: connection.keyRecords, certificateIssuers: TestCertificateAuthority.shared.issuers)
                let merchants = (
                    try await store.certifiedProcessingKey(merchantID: "merchant.com.example.server", .ec),
                    try await store.certifiedProcessingKey(merchantID: "merchant.cn.example.server", .rsa)
                )
                let configure = try await prepare(store)
                return (merchants.0, merchants.1, configure)
            }
            await admin.close()
            try configureWithKeys(&configuration)
        } catch {
            await admin.close()
            throw error
        }
        scheme = configuration.tls == nil ? "http" : "https"

        let logs = CapturedLog()
        self.logs = logs
        var logger = Logger(label: "paywarden-test") { _ in logs.handler() }
        logger.logLevel = .debug
        let server = try await PaywardenServer.make(configuration, logger: logger)
        self.server = server
        let (ports, continuation) = AsyncStream.makeStream(of: (PaywardenServer.Listener, Int).self)
        let services: [any Service]
        do {
            services = try server.services { listener, port in continuation.yield((listener, port)) }
        } catch {
            await server.hsm.close()
            throw error
        }
        // The stream ends when the group does, so a listener that cannot bind fails the start
        // instead of leaving it waiting for a port.
        let task = Task {
            defer { continuation.finish() }
            let group = ServiceGroup(configuration: .init(services: services, logger: logger))
            try await group.run()
        }
        serverTask = task
        var bound: [PaywardenServer.Listener: Int] = [:]
        for await (listener, port) in ports {
            bound[listener] = port
            if bound.count == services.count { break }
        }
        guard bound.count == services.count else {
            let failure = await task.result
            await server.hsm.close()
            throw TestServerStartError(reason: "\(failure)")
        }
        port = bound[.api] ?? 0
        operationsPort = bound[.operations] ?? port
        // What an admin sets up with `paywarden paypages create` before apps post tokens.
        _ = try await server.vault.createPaypage(
            id: Self.examplePaypage, organization: "example", merchantIdentifiers: [ecMerchant, rsaMerchant].compactMap(\.merchantID),
            reportGroups: [], tokenFormat: .t)
        _ = try await server.vault.createPaypage(
            id: Self.rivalPaypage, organization: "rival", merchantIdentifiers: ["merchant.com.rival"], reportGroups: ["rival"],
            tokenFormat: .d)
    }

    public static let examplePaypage = "examplePaypage"
    public static let rivalPaypage = "rivalPaypage"

    public func ecToken(payload: [UInt8] = PaymentPayloads.threeDSecure(), options: TokenForge.Options = .init()) throws -> [UInt8] {
        try forge.ecToken(to: ecMerchant, payload: payload, options: options)
    }

    public func rsaToken(payload: [UInt8] = PaymentPayloads.emv()) throws -> [UInt8] {
        guard case .rsa(let modulus, let exponent) = rsaMerchant.key.publicKey else { throw CocoaError(.featureUnsupported) }
        return try forge.rsaV1(payload: payload, merchant: .init(n: modulus, e: exponent)).withPublicKeyHash(rsaMerchant.publicKeyHash)
    }

    /// A response as the tests read it.
    public struct Reply: Sendable {
        public let status: Int
        public let headers: [(String, String)]
        public let body: [UInt8]

        public var text: String { String(decoding: body, as: UTF8.self) }

        /// The stable error code of an error body.
        public var errorCode: String? {
            let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
            return (object?["error"] as? [String: Any])?["code"] as? String
        }

        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    /// A request over the loopback interface with a real HTTP client. `apiKey` defaults to the
    /// decrypt key; `.some(nil)` sends none.
    public func send(
        _ method: HTTPMethod = .POST, _ path: String = "/v1/payment-tokens/decrypt", body: [UInt8]? = nil,
        apiKey: String?? = .none, contentType: String = "application/json", headers: [(String, String)] = [],
        port: Int? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: "\(scheme)://127.0.0.1:\(port ?? self.port)\(path)")
        request.method = method
        if let key = apiKey ?? decryptKey { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await Self.client.execute(request, timeout: .seconds(30))
        let collected = try await response.body.collect(upTo: 1 << 20)
        return Reply(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: Array(buffer: collected))
    }

    /// An operations route (`/healthz`, `/readyz`, `/metrics`), on whichever listener serves it.
    public func operations(_ path: String) async throws -> Reply {
        try await send(.GET, path, apiKey: .some(nil), port: operationsPort)
    }

    /// Polls `/readyz` until it answers `status`, for at most `seconds`.
    public func waitForReadiness(_ status: Int, seconds: Double = 15) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try await operations("/readyz").status == status { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Stops the listeners, closes the HSM and destroys the token.
    func stop() async {
        serverTask.cancel()
        _ = try? await serverTask.value
        await server.closeAuditChain()
        await server.hsm.close()
        token.destroy()
    }
}

/// Every log line the server wrote, rendered by the service's own handlers in both formats
/// (`PAYWARDEN_LOG_FORMAT` text and json), for checking that no secret leaks in either: ``text``
/// is the text lines, then the JSON lines.
public final class CapturedLog: Sendable {
    private let lines = Mutex<(text: [String], json: [String])>(([], []))

    public init() {}

    public var text: String { lines.withLock { ($0.text + $0.json).joined() } }

    /// The lines of one format.
    public func lines(_ format: LogFormat) -> [String] {
        lines.withLock { format == .text ? $0.text : $0.json }.flatMap { $0.split(separator: "\n").map(String.init) }
    }

    /// Both formats' handlers, at trace level.
    public func handler(label: String = "paywarden-test") -> some LogHandler {
        var handler = MultiplexLogHandler(
            LogFormat.allCases.map { format in format.handler(label: label, stream: Stream(log: self, format: format)) })
        handler.logLevel = .trace
        return handler
    }

    private struct Stream: TextOutputStream, Sendable {
        let log: CapturedLog
        let format: LogFormat

        mutating func write(_ string: String) {
            log.lines.withLock { format == .text ? $0.text.append(string) : $0.json.append(string) }
        }
    }
}

/// The test server's listeners did not all come up.
public struct TestServerStartError: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { "the test server did not start: \(reason)" }
}
