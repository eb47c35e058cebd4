/// Where and how traces go when `PAYWARDEN_TRACING=on`. The standard `OTEL_*` variables
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_SERVICE_NAME`,
/// `OTEL_TRACES_SAMPLER`, `OTEL_BSP_SCHEDULE_DELAY`, …) override these values, as swift-otel
/// reads them; these are what applies without them.
public struct TracingConfiguration: Sendable {
    public var serviceName = "paywarden"
    /// The full OTLP/HTTP traces URL (…/v1/traces); nil: swift-otel's default, http://localhost:4318/v1/traces.
    public var endpoint: String?
    /// How long finished spans wait to be sent together; nil: swift-otel's default (5 s).
    public var exportDelay: Duration?

    public init(serviceName: String = "paywarden", endpoint: String? = nil, exportDelay: Duration? = nil) {
        self.serviceName = serviceName
        self.endpoint = endpoint
        self.exportDelay = exportDelay
    }
}
