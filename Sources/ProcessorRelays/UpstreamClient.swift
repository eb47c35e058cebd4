import AsyncHTTPClient
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import OutboundTLS
import PKCS11
import PaywardenServices
import ProcessorMessages
import Synchronization
import Tracing

/// One format's upstream over HTTPS (TLS 1.2 or later, the system's roots plus the configured
/// ones, the configured client certificate when the upstream requires one): a request is POSTed
/// once and never retried, because once it may have left, a second one could authorize the same
/// cryptogram twice. Redirects are not followed, compressed replies
/// are not inflated, at most ``UpstreamConfiguration/maximumResponseBytes`` are read, and the
/// whole exchange has the configured timeout. Every call is measured by format and outcome (`ok`,
/// `http_4xx`, `http_5xx`, `unreachable`, `timeout`, `too_large`, `invalid_response`); logs name the
/// outcome and the status, never a body.
///
/// Client keys in the HSM sign the handshake there (``HSMTLSSigningKey``); their clients are made
/// by ``useHSMKeys(_:recorded:recordInUse:)`` once the keys are checked at start-up, before the API
/// listens. Of two keys (a changeover), the first the upstream accepts is presented
/// (UpstreamClient+ClientKeys.swift).
public final class UpstreamClient: Sendable {
    public let configuration: UpstreamConfiguration
    let state: Mutex<State>
    let metrics: ServerMetrics
    let logger: Logger

    typealias RecordInUse = @Sendable (KeyIdentifier) async -> Void

    /// The clients, one per client identity (one without a key or with a PEM key), and which is
    /// presented; with several HSM keys, the changeover's bookkeeping.
    struct State {
        var identities: [ClientIdentity] = []
        var clients: [HTTPClient] = []
        var inUse = 0
        /// A check of which key the upstream accepts is running.
        var checking = false
        /// The last check found a key accepted (else the periodic check runs even for the first key).
        var settled = false
        var lastCheck: ContinuousClock.Instant?
        var recordInUse: RecordInUse?
        var periodicCheck: Task<Void, Never>?
        /// The check a failed connection started, while it waits or runs.
        var followUpCheck: Task<Void, Never>?
        /// Shut down: no check starts, no key is presented or recorded.
        var stopped = false
    }

    public init(configuration: UpstreamConfiguration, metrics: ServerMetrics, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        metrics.prepareUpstreams([configuration.format.rawValue])
        var tls = Self.baseTLS(configuration)
        if let key = configuration.clientKey, !configuration.clientCertificateChain.isEmpty {
            tls.certificateChain = configuration.clientCertificateChain.map { .certificate($0) }
            tls.privateKey = .privateKey(key)
        }
        let clients = configuration.clientKeysInHSM.isEmpty ? [Self.makeClient(tls: tls, configuration: configuration, logger: logger)] : []
        state = Mutex(State(clients: clients))
    }

    static func baseTLS(_ configuration: UpstreamConfiguration) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.renegotiationSupport = .none
        if !configuration.extraTrustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(configuration.extraTrustRoots)] }
        return tls
    }

    static func makeClient(tls: TLSConfiguration, configuration: UpstreamConfiguration, logger: Logger) -> HTTPClient {
        let timeout = TimeAmount(configuration.timeout)
        var http = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: min(timeout, .seconds(10)), read: timeout, write: timeout))
        // A compressed body would slip past the byte cap.
        http.decompression = .disabled
        // Idle connections go before an upstream's own idle timeout (often 30–60 s) can close one
        // under a request that is being written, which would leave that request's fate unknown.
        http.connectionPool = .init(idleTimeout: .seconds(15))
        // AsyncHTTPClient's own spans record the full URL and add a second `traceparent`; ours
        // (`exchange`) records the format and outcome only.
        http.tracing.tracer = nil
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: http, backgroundActivityLogger: logger)
    }

    /// Why there is no usable reply. `mayHaveArrived` is false only when the request certainly
    /// never reached the upstream (the connection was refused, the TLS handshake failed).
    public struct Failure: Error, Sendable {
        /// The metric outcome: anything but `ok`.
        let outcome: UpstreamOutcome
        let mayHaveArrived: Bool
        /// The upstream's HTTP status, when it answered one that is not a success (for the log and the client).
        let upstreamStatus: Int?

        /// - Parameters:
        ///   - outcome: the metric outcome (anything but `ok`).
        ///   - mayHaveArrived: false only when the request certainly never reached the upstream.
        ///   - upstreamStatus: the upstream's HTTP status, when it answered one.
        public init(outcome: UpstreamOutcome, mayHaveArrived: Bool, upstreamStatus: Int? = nil) {
            self.outcome = outcome
            self.mayHaveArrived = mayHaveArrived
            self.upstreamStatus = upstreamStatus
        }

        /// An answer with `status`, not a success: its class, so that the metric's outcomes are a fixed set.
        public static func refused(status: Int) -> Failure {
            let outcome: UpstreamOutcome =
                (400..<500).contains(status) ? .http4xx : (500..<600).contains(status) ? .http5xx : .invalidResponse
            return Failure(outcome: outcome, mayHaveArrived: true, upstreamStatus: status)
        }

        /// The gateway status of HTTP the client gets: 503 when the upstream could not be reached
        /// (nothing was sent), 504 when it did not answer in time, 502 for anything else.
        public var status: HTTPResponse.Status {
            switch outcome {
            case .timeout: .gatewayTimeout
            case .unreachable where !mayHaveArrived: .serviceUnavailable
            default: .badGateway
            }
        }

        /// What happened, for the client, and whether the request may have arrived: when it may,
        /// the client must find out before sending the same card data again.
        public var explanation: String {
            switch outcome {
            case .timeout: "the processor did not answer in time; the transaction's outcome is unknown (query it before sending again)"
            case .unreachable where !mayHaveArrived: "the processor cannot be reached; nothing was sent"
            case .unreachable: "the connection to the processor failed; the transaction's outcome is unknown"
            case .http4xx:
                "the processor refused the request (HTTP \(upstreamStatus.map(String.init) ?? "4xx")); query it before sending the "
                    + "transaction again"
            default: "the processor's answer was not usable (\(outcome.rawValue)); the transaction's outcome is unknown"
            }
        }
    }

    /// POSTs `body` to the upstream's base URL plus `path`, once, with `headers` beside the content
    /// type, then makes the client's answer of a 2xx reply with `rewrite`. Anything else is a
    /// failure: another status, no reply, or a reply `rewrite` refuses (`invalid_response`, logged by
    /// the rule it broke, never by content). The call is measured once, by its final outcome.
    public func exchange<Value>(
        _ path: String, body: [UInt8], contentType: String, headers: [(String, String)],
        rewrite: ([UInt8]) throws(ProcessorMessageError) -> Value
    ) async throws(Failure) -> Value {
        let start = ContinuousClock.now
        // A client span named by the format only: the body is card data, the path carries nothing
        // the trace needs.
        let span = startSpan("processor.\(configuration.format.rawValue)", ofKind: .client)
        defer { span.end() }
        span.attributes["http.request.method"] = "POST"
        span.attributes["paywarden.processor.format"] = configuration.format.rawValue
        let result: Result<Value, Failure>
        switch await send(path, body: body, contentType: contentType, headers: headers, span: span) {
        case .success(let reply):
            do {
                result = .success(try rewrite(reply))
            } catch {
                logger.warning(
                    "the upstream's reply is not one of its format's",
                    metadata: [
                        "format": "\(configuration.format.rawValue)", "code": "\(error.code.rawValue)", "field": "\(error.field ?? "")",
                    ])
                result = .failure(Failure(outcome: .invalidResponse, mayHaveArrived: true))
            }
        case .failure(let failure):
            result = .failure(failure)
        }
        let duration = ContinuousClock.now - start
        let outcome: UpstreamOutcome
        switch result {
        case .success: outcome = .ok
        case .failure(let failure): outcome = failure.outcome
        }
        metrics.upstream(format: configuration.format.rawValue, outcome: outcome, duration: duration)
        // A connection that failed may be a processor that no longer accepts the key presented.
        if case .failure(let failure) = result,
            failure.outcome == .unreachable || failure.upstreamStatus.map(Self.certificateRefusalStatuses.contains) == true
        {
            checkClientKeysAfterFailure()
        }
        span.attributes["paywarden.processor.outcome"] = outcome.rawValue
        if outcome != .ok { span.setStatus(SpanStatus(code: .error)) }
        var metadata: Logger.Metadata = [
            "format": "\(configuration.format.rawValue)", "outcome": "\(outcome.rawValue)",
            "milliseconds": "\(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)",
        ]
        if case .failure(let failure) = result, let status = failure.upstreamStatus { metadata["status"] = "\(status)" }
        if outcome == .ok {
            logger.debug("upstream answered", metadata: metadata)
        } else {
            logger.warning("upstream call failed; it is not retried", metadata: metadata)
        }
        return try result.get()
    }

    /// One POST: the body of a 2xx reply, or why there is none.
    private func send(
        _ path: String, body: [UInt8], contentType: String, headers: [(String, String)], span: any Span
    ) async -> Result<[UInt8], Failure> {
        var request = HTTPClientRequest(url: configuration.url(path))
        request.method = .POST
        request.headers.add(name: "Content-Type", value: contentType)
        request.headers.add(contentsOf: headers)
        request.headers.add(name: "Accept-Encoding", value: "identity")
        TraceContextHeadersInjector.inject(span, into: &request.headers)
        request.body = .bytes(ByteBuffer(bytes: body))
        // None only before the start-up check of HSM keys, which happens before the API listens.
        guard let client = state.withLock({ $0.clients.isEmpty ? nil : $0.clients[$0.inUse] }) else {
            return .failure(Failure(outcome: .unreachable, mayHaveArrived: false))
        }
        do {
            let response = try await client.execute(request, deadline: .now() + TimeAmount(configuration.timeout), logger: logger)
            let status = Int(response.status.code)
            span.attributes["http.response.status_code"] = status
            let collected = try await response.body.collect(upTo: configuration.maximumResponseBytes)
            return (200..<300).contains(status)
                ? .success(Array(buffer: collected)) : .failure(.refused(status: status))
        } catch {
            return .failure(Self.failure(error))
        }
    }

    private static func failure(_ error: any Error) -> Failure {
        if error is NIOTooManyBytesError { return Failure(outcome: .tooLarge, mayHaveArrived: true) }
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                return Failure(outcome: .timeout, mayHaveArrived: true)
            case .connectTimeout:
                return Failure(outcome: .unreachable, mayHaveArrived: false)
            default:
                break
            }
        }
        if error is NIOConnectionError || (error as? IOError)?.errnoCode == ECONNREFUSED {
            return Failure(outcome: .unreachable, mayHaveArrived: false)
        }
        // No request is written before the handshake completes.
        if case .handshakeFailed = error as? NIOSSLError { return Failure(outcome: .unreachable, mayHaveArrived: false) }
        // TLS failures, a connection closed mid-exchange, …: nothing usable came back.
        return Failure(outcome: .unreachable, mayHaveArrived: true)
    }

    public func shutdown() async {
        let (clients, checks) = state.withLock { state in
            defer {
                state.stopped = true
                state.clients = []
                state.periodicCheck = nil
                state.followUpCheck = nil
            }
            return (state.clients, [state.periodicCheck, state.followUpCheck].compactMap { $0 })
        }
        for check in checks { check.cancel() }
        for check in checks { await check.value }
        for client in clients { try? await client.shutdown() }
    }
}
