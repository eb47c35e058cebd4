import KeyCustody
import Logging
import PKCS11
import PaywardenServices
import ServiceLifecycle

/// The relay's upstream clients: made at start-up, one per configured format, and shut down with
/// the server (graceful shutdown first lets requests in flight finish their one call).
public final class RelayService: Service, Sendable {
    public let cnp: UpstreamClient?
    public let mercuryPay: UpstreamClient?
    public let radial: UpstreamClient?
    let configuration: RelayConfiguration
    /// Where the client keys named by id are, and their certificates (``prepareClientKeys()``).
    let hsm: HSM
    let keys: MerchantKeyStore
    let logger: Logger

    public init(configuration: RelayConfiguration, hsm: HSM, keys: MerchantKeyStore, metrics: ServerMetrics, logger: Logger) {
        self.configuration = configuration
        self.hsm = hsm
        self.keys = keys
        self.logger = logger
        let make = { (upstream: UpstreamConfiguration?) in
            upstream.map { UpstreamClient(configuration: $0, metrics: metrics, logger: logger) }
        }
        cnp = make(configuration.cnp)
        mercuryPay = make(configuration.mercuryPay)
        radial = make(configuration.radial)
    }

    public func run() async throws {
        // Nothing to do until the service group stops; then the clients go.
        try? await gracefulShutdown()
        for client in [cnp, mercuryPay, radial].compactMap({ $0 }) { await client.shutdown() }
    }
}

extension RelayService {
    /// The relays, each taking its cards from `service` through ``CardIntake``: cnpAPI's and
    /// MercuryPay's with their upstream configured; Radial's always, its decrypt API answering
    /// without one.
    public struct Relays: Sendable {
        public let cnp: CnpRelay?
        public let mercuryPay: MercuryPayRelay?
        public let radial: RadialRelay
    }

    public func relays(over service: VaultService) -> Relays {
        Relays(
            cnp: cnp.map { CnpRelay(service: service, upstream: $0, merchantIDs: configuration.cnpMerchantIDs, logger: logger) },
            mercuryPay: mercuryPay.map {
                MercuryPayRelay(
                    service: service, upstream: $0, fields: configuration.mercuryPayFields,
                    organizations: configuration.mercuryPayOrganizations)
            },
            radial: RadialRelay(
                service: service, upstream: radial, storeIDs: configuration.radialStoreIDs, apiKey: configuration.radialAPIKey,
                logger: logger))
    }
}
