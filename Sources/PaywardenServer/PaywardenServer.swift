import ApplePay
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import KeyCustody
import Logging
import NIOSSL
import PKCS11
import ServiceLifecycle

/// The Paywarden HTTP service: builds the routes, TLS and services from a configuration and
/// runs them until a termination signal, finishing in-flight requests before it stops.
public struct PaywardenServer: Sendable {
    public let configuration: ServerConfiguration
    public let hsm: HSM
    public let metrics: ServerMetrics
    let decryption: DecryptionService
    let maintenance: HSMMaintenanceService
    let logger: Logger

    /// Opens the HSM (probing its paths) and prepares the service; nothing listens yet.
    public static func make(_ configuration: ServerConfiguration, logger: Logger = Logger(label: "paywarden")) async throws -> PaywardenServer {
        if configuration.apiKeys.keys.isEmpty {
            logger.warning("no API keys configured: every decrypt request will be refused (set PAYWARDEN_API_KEYS)")
        }
        let hsm = try await HSM.open(configuration.hsm, logger: logger)
        let metrics = ServerMetrics()
        metrics.setPaths(ecdh: hsm.capabilities.ecdhPath?.rawValue, rsa: hsm.capabilities.rsaDecryptionPath?.rawValue)
        let decryption = DecryptionService(hsm: hsm, configuration: configuration, metrics: metrics)
        let maintenance = HSMMaintenanceService(
            decryption: decryption, metrics: metrics, refreshInterval: configuration.keyRefreshInterval, logger: logger
        )
        await maintenance.refresh()
        return PaywardenServer(configuration: configuration, hsm: hsm, metrics: metrics, decryption: decryption,
                               maintenance: maintenance, logger: logger)
    }

    /// Whether the HSM is logged in and the key map loaded.
    public var isReady: Bool { maintenance.isReady }

    /// The Hummingbird application with every route and service.
    /// - Parameter onServerRunning: called with the bound port once listening.
    public func application(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some ApplicationProtocol {
        let router = Router(context: PaywardenRequestContext.self)
        router.middlewares.add(RequestObservationMiddleware(metrics: metrics))
        let operations = OperationsController(maintenance: maintenance, metrics: metrics)
        router.get("/healthz", use: operations.health)
        router.get("/readyz", use: operations.readiness)
        router.get("/metrics", use: operations.metrics)
        let decrypt = DecryptController(service: decryption, maxBodyBytes: configuration.maxBodyBytes)
        router.group("/v1/payment-tokens")
            .add(middleware: APIKeyAuthenticator(registry: configuration.apiKeys, scope: .decrypt))
            .post("/decrypt", use: decrypt.decrypt)

        let server: HTTPServerBuilder
        if let tls = configuration.tls {
            server = try .tls(.http1(), tlsConfiguration: Self.tlsConfiguration(tls))
        } else {
            server = .http1()
        }
        return Application(
            router: router, server: server,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "paywarden"),
            services: [maintenance],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// Serves until SIGTERM or SIGINT, then finishes in-flight requests and closes the HSM.
    public func run() async throws {
        let app = try application { port in logger.info("listening", metadata: ["port": "\(port)"]) }
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch {
            await hsm.close()
            throw error
        }
        await hsm.close()
    }

    /// TLS 1.2 or later with the suites Apple lists for Apple Pay servers.
    static func tlsConfiguration(_ settings: ServerConfiguration.TLSSettings) throws -> TLSConfiguration {
        let chain = try NIOSSLCertificate.fromPEMFile(settings.certificatePath).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(file: settings.privateKeyPath, format: .pem)
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        // TLS 1.2 suites from Apple's list; TLS 1.3 negotiates AES-GCM suites of its own.
        tls.cipherSuites = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"
        if let clientCA = settings.clientCAPath {
            tls.trustRoots = .file(clientCA)
            tls.certificateVerification = settings.requireClientCertificate ? .noHostnameVerification : .optionalVerification
        }
        return tls
    }
}
