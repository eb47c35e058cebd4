import Logging
import OTel
import ServiceLifecycle
import Synchronization
import Tracing

/// Starts OpenTelemetry tracing (swift-otel, OTLP/HTTP protobuf) for traces only: logs stay with
/// our own handler (`FormattedLogHandler`) and metrics with swift-prometheus, so swift-otel's logs
/// and metrics are off. The tracer becomes the process's `InstrumentationSystem`, which can be set
/// once per process: a second start (a second server in one test process) keeps the first tracer.
public enum TracingBootstrap {
    private static let bootstrapped = Mutex(false)

    /// The service that exports finished spans; run it in the server's service group, where it
    /// is shut down last and sends what is left.
    public static func start(_ configuration: TracingConfiguration, logger: Logger) throws -> any Service {
        var otel = OTel.Configuration.default
        otel.serviceName = configuration.serviceName
        otel.diagnosticLogger = .custom(logger)
        otel.diagnosticLogLevel = .warning
        otel.logs.enabled = false
        otel.metrics.enabled = false
        otel.traces.enabled = true
        otel.traces.exporter = .otlp
        otel.traces.otlpExporter.protocol = .httpProtobuf
        if let endpoint = configuration.endpoint { otel.traces.otlpExporter.endpoint = endpoint }
        if let delay = configuration.exportDelay { otel.traces.batchSpanProcessor.scheduleDelay = delay }
        let backend = try OTel.makeTracingBackend(configuration: otel)
        let first = bootstrapped.withLock { done in
            defer { done = true }
            return !done
        }
        if first {
            InstrumentationSystem.bootstrap(backend.factory)
        } else {
            logger.warning("tracing was already started in this process: its first tracer stays")
        }
        logger.info("tracing on: spans are exported over OTLP/HTTP", metadata: ["service": "\(configuration.serviceName)"])
        return backend.service
    }

    /// Puts the active span's `trace_id` and `span_id` on each log line (`JSONLogFormatter`
    /// lifts them to fields).
    public static var loggingMetadataProvider: Logger.MetadataProvider {
        OTel.makeLoggingMetadataProvider()
    }
}
