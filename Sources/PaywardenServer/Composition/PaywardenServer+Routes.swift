import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import PaywardenConfiguration
import PaywardenServices
import ProcessorRelays
import ServiceLifecycle

/// The route table: each controller mounts its own routes (a `RouteCollection`), and the server
/// adds them with the middleware every request passes through.
extension PaywardenServer {
    func apiRouter(includingOperations: Bool) -> Router<PaywardenRequestContext> {
        let router = Router(context: PaywardenRequestContext.self)
        // Outside the observation middleware, so its request line carries the span's ids.
        if tracing != nil { router.middlewares.add(RequestTracingMiddleware(trustedCallers: configuration.traceContextSources)) }
        router.middlewares.add(RequestObservationMiddleware(metrics: metrics))
        if includingOperations { router.addRoutes(operationsController.routes) }
        let keys = configuration.apiKeys
        let maxBodyBytes = configuration.maxBodyBytes
        router.addRoutes(
            DecryptController(service: decryption, vault: vaultService, metrics: metrics, maxBodyBytes: maxBodyBytes).routes(keys: keys))
        router.addRoutes(
            EProtectController(
                service: vaultService, perPaypage: RateLimiter(ratePerSecond: configuration.eProtectRatePerPaypage),
                perAddress: RateLimiter(ratePerSecond: configuration.eProtectRatePerAddress), clients: configuration.clients,
                maxBodyBytes: maxBodyBytes
            ).routes)
        router.addRoutes(VaultController(service: vaultService).routes(keys: keys))
        let relays = relay.relays(over: vaultService)
        router.addRoutes(
            CnpController(
                intake: CardIntake(service: vaultService, form: CnpRelay.form), registry: keys, maxBodyBytes: maxBodyBytes,
                relay: relays.cnp
            ).routes)
        router.addRoutes(MercuryPayController(maxBodyBytes: maxBodyBytes, relay: relays.mercuryPay).routes(keys: keys))
        router.addRoutes(RadialController(relay: relays.radial, maxBodyBytes: maxBodyBytes).routes(keys: keys))
        router.addRoutes(MerchantTokenNotificationController(service: merchantTokens, sources: notificationSources).routes)
        router.addRoutes(
            PaymentSessionController(service: merchantTokens, maxBodyBytes: maxBodyBytes, webMerchants: webMerchants).routes(keys: keys))
        router.addRoutes(MerchantTokensController(service: merchantTokens, maxBodyBytes: maxBodyBytes).routes(keys: keys))
        router.addRoutes(DomainAssociationController(service: webMerchants).routes)
        router.addRoutes(WebMerchantsController(service: webMerchants, maxBodyBytes: maxBodyBytes).routes(keys: keys))
        router.addRoutes(UsageInformationController(service: merchantTokens, maxBodyBytes: maxBodyBytes).routes(keys: keys))
        router.addRoutes(
            UsageInformationPackageController(
                service: merchantTokens,
                failures: RateLimiter(
                    ratePerSecond: configuration.usageInformationFailuresPerAddress,
                    burst: 10 * configuration.usageInformationFailuresPerAddress),
                clients: configuration.clients
            ).routes)
        return router
    }

    func operationsRouter() -> Router<PaywardenRequestContext> {
        let router = Router(context: PaywardenRequestContext.self)
        router.middlewares.add(RequestObservationMiddleware(metrics: metrics))
        router.addRoutes(operationsController.routes)
        return router
    }

    /// Readiness follows the HSM's and the key map's, and says shutting down once the drain began.
    private var operationsController: OperationsController {
        let maintenance = self.maintenance
        let drain = self.drain
        return OperationsController(
            readiness: { drain.isDraining ? maintenance.readiness().shuttingDown() : maintenance.readiness() }, metrics: metrics)
    }

    func application(
        router: Router<PaywardenRequestContext>, address: ListenAddress, tls: ServerSettings.TLS?, services: [any Service],
        onRunning: @escaping @Sendable (Int) async -> Void
    ) throws -> Application<RouterResponder<PaywardenRequestContext>> {
        let drain = self.drain
        metrics.prepareRoutes(router.routes.map { (method: $0.method.rawValue, route: "\($0.path)") })
        return try Self.application(
            router: router, address: address, tls: tls, configuration: configuration, services: services, onRunning: onRunning,
            closingConnections: { drain.isDraining }, logger: logger)
    }

    /// Every listener's server: HTTP/1.1 (in TLS when configured) with the idle timeout, the
    /// request read timeout, the requests per connection, the connections per client and the
    /// connection cap of `configuration`.
    static func application(
        router: Router<PaywardenRequestContext>, address: ListenAddress, tls: ServerSettings.TLS?, configuration: ServerConfiguration,
        services: [any Service], onRunning: @escaping @Sendable (Int) async -> Void,
        closingConnections: @escaping @Sendable () -> Bool = { false }, logger: Logger
    ) throws -> Application<RouterResponder<PaywardenRequestContext>> {
        // A connection that sends nothing for the idle timeout is closed, and a request that has not
        // arrived whole within the read timeout is answered 408 and closed (slowloris, trickled
        // bodies); the connection cap makes further ones wait, unserved, and the per-client share
        // keeps one client from taking every slot.
        let rules = ConnectionRules(
            idleTimeout: TimeAmount(configuration.idleTimeout), readTimeout: TimeAmount(configuration.requestReadTimeout),
            maxRequestsPerConnection: configuration.maxRequestsPerConnection, closingConnections: closingConnections,
            connections: ConnectionsPerClient(
                limit: configuration.maxConnectionsPerClient, clients: configuration.clients))
        let http1 = HTTPServerBuilder { responder in GuardedHTTP1Channel(responder: responder, rules: rules) }
        let server: HTTPServerBuilder = if let tls { try .tls(http1, tlsConfiguration: ServerTLS.configuration(tls)) } else { http1 }
        return Application(
            router: router, server: server,
            configuration: .init(
                address: .hostname(address.host, port: address.port), serverName: "paywarden",
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections, logger: logger)),
            services: services,
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }
}
