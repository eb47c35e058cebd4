import ApplePay
import AsyncHTTPClient
import Crypto
import Foundation
import NIOHTTP1
import KeyCustody
import Logging
import NIOCore
import NIOSSL
import PKCS11
import PKCS11Testing
import PaywardenServer
import PaywardenTestSupport
import Synchronization
import X509

/// A real Paywarden server on loopback, on a fresh SoftHSM token with an EC and an RSA merchant
/// key certified by the test CA, trusting the test PKI, with a captured log.
final class ServerHarness: Sendable {
    let token: SoftHSMTestToken
    let server: PaywardenServer
    let port: Int
    let scheme: String
    let forge: TokenForge
    let ecMerchant: MerchantKey
    let rsaMerchant: MerchantKey
    let decryptKey: String
    let registerOnlyKey: String
    let logs: CapturedLog
    private let serverTask: Task<Void, any Error>

    static let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: {
        var configuration = HTTPClient.Configuration()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        configuration.tlsConfiguration = tls
        return configuration
    }())

    init(_ adjust: @Sendable (inout ServerConfiguration) throws -> Void = { _ in }) async throws {
        token = try await SoftHSMTestToken.make(labelPrefix: "server")
        forge = TokenForge(pki: DecryptionTestEnvironment.sharedPKI)
        // Keys are set up by an admin process before the server starts, as in production.
        let admin = try await token.open()
        let store = MerchantKeyStore(hsm: admin)
        ecMerchant = try await Self.certified(store, "merchant.com.example.server", .ec)
        rsaMerchant = try await Self.certified(store, "merchant.cn.example.server", .rsa)
        await admin.close()

        let (decryptKey, decryptEntry) = APIKey.generate(name: "payments", scopes: [.decrypt])
        let (registerKey, registerEntry) = APIKey.generate(name: "checkout", scopes: [.register])
        self.decryptKey = decryptKey
        self.registerOnlyKey = registerKey
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.hsm = token.configuration
        configuration.apiKeys = APIKeyRegistry(keys: [try APIKey(entry: decryptEntry), try APIKey(entry: registerEntry)])
        configuration.trustAnchors = TrustAnchors(certificates: [DecryptionTestEnvironment.sharedPKI.root], source: "test root")
        configuration.keyRefreshInterval = .milliseconds(250)
        try adjust(&configuration)
        scheme = configuration.tls == nil ? "http" : "https"

        let logs = CapturedLog()
        self.logs = logs
        var logger = Logger(label: "paywarden-test") { _ in logs.handler() }
        logger.logLevel = .debug
        let server = try await PaywardenServer.make(configuration, logger: logger)
        self.server = server
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = try server.application { port in continuation.yield(port) }
        serverTask = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        port = await iterator.next() ?? 0
    }

    private static func certified(_ store: MerchantKeyStore, _ merchantID: String, _ type: KeyAlgorithmChoice) async throws -> MerchantKey {
        let (_, csr) = try await store.create(merchantID: merchantID, purpose: .processing, algorithm: type)
        let certificate = try TestCertificateAuthority().issue(csrPEM: csr, merchantID: merchantID, purpose: .processing)
        return try await store.importCertificate(MerchantCertificate(bytes: certificate)).key
    }

    func ecToken(payload: [UInt8] = PaymentPayloads.threeDSecure(), options: TokenForge.Options = .init()) throws -> [UInt8] {
        guard case .ecP256(let point) = ecMerchant.key.publicKey else { throw CocoaError(.featureUnsupported) }
        return try forge.ecV1(payload: payload, merchant: .init(x963Representation: point),
                              merchantIdentifierHash: TokenForge.merchantIdentifierHash(ecMerchant.merchantID!), options: options)
            .withPublicKeyHash(ecMerchant.publicKeyHash)
    }

    func rsaToken(payload: [UInt8] = PaymentPayloads.emv()) throws -> [UInt8] {
        guard case .rsa(let modulus, let exponent) = rsaMerchant.key.publicKey else { throw CocoaError(.featureUnsupported) }
        return try forge.rsaV1(payload: payload, merchant: .init(n: modulus, e: exponent)).withPublicKeyHash(rsaMerchant.publicKeyHash)
    }

    struct Reply: Sendable {
        let status: Int
        let headers: [(String, String)]
        let body: [UInt8]

        var errorCode: String? {
            ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]).flatMap { ($0["error"] as? [String: Any])?["code"] as? String }
        }

        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    /// A request over the loopback interface with a real HTTP client.
    func send(_ method: HTTPMethod = .POST, _ path: String = "/v1/payment-tokens/decrypt", body: [UInt8]? = nil,
              apiKey: String?? = .none) async throws -> Reply {
        var request = HTTPClientRequest(url: "\(scheme)://127.0.0.1:\(port)\(path)")
        request.method = method
        let key = apiKey ?? decryptKey
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await Self.client.execute(request, timeout: .seconds(30))
        let collected = try await response.body.collect(upTo: 1 << 20)
        return Reply(status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: Array(buffer: collected))
    }

    func stop() async {
        serverTask.cancel()
        _ = try? await serverTask.value
        await server.hsm.close()
    }
}

/// Every log line the server wrote, message and metadata, for checking that no secret leaks.
final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    var text: String { lines.withLock { $0.joined(separator: "\n") } }

    func handler() -> some LogHandler { Handler(log: self) }

    fileprivate func append(_ line: String) { lines.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            log.append("\(event.level) \(event.message) \(merged)")
        }
    }
}
