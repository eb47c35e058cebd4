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
    /// Where the client keys named by id are, and their certificates (``prepareClientKeys()``).
    let hsm: HSM
    let keys: MerchantKeyStore
    let logger: Logger

    public init(configuration: RelayConfiguration, hsm: HSM, keys: MerchantKeyStore, metrics: ServerMetrics, logger: Logger) {
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
