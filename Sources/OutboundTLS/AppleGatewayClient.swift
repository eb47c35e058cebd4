import AsyncHTTPClient
import Foundation
import KeyCustody
import Logging
import NIOCore
import NIOHTTP1
import PKCS11
import Synchronization
import Tracing

/// Calls to Apple's Apple Pay gateway over mutual TLS, authenticated with the merchant's
/// identity certificate whose key stays in the HSM (docs/apple-pay.md, "Merchant tokens").
///
/// Every call chooses the merchant's newest valid identity certificate, checks what it sends,
/// never follows a redirect, caps what it reads and maps every outcome to an
/// ``AppleGatewayError`` the caller can act on. Logs carry ids, statuses and durations, never
/// bodies. Call ``shutdown()`` before releasing the client.
public final class AppleGatewayClient: Sendable {
    public let configuration: AppleGatewayConfiguration
    private let hsm: HSM
    private let keys: MerchantKeyStore
    private let logger: Logger
    private let connections: IdentityConnections
    private let credentials = Mutex<[String: (credential: IdentityCredential, readAt: ContinuousClock.Instant)]>([:])

    /// How long a chosen credential is reused before the key store is read again.
    static let credentialCacheLifetime: Duration = .seconds(30)

    /// Told each call's operation and outcome (``Outcome``): the server counts them.
    private let requestObserver: (@Sendable (_ operation: String, _ outcome: Outcome) -> Void)?

    /// How one call to Apple ended, as counted: whatever the caller then makes of Apple's body.
    public enum Outcome: String, Sendable, CaseIterable {
        /// Apple answered with a status the call expects.
        case ok
        /// Apple refused the request (a 4xx other than those below): the request's fault.
        case http4xx = "http_4xx"
        /// 408 or 429: Apple is too busy for it now, as with a 5xx.
        case throttled
        case http5xx = "http_5xx"
        /// No answer: no connection, a timeout, or an answer cut short.
        case unreachable
        /// An answer too large, or with a status that is neither success nor error.
        case invalidResponse = "invalid_response"
        /// The HSM could not sign the TLS handshake with the identity key.
        case hsmUnavailable = "hsm_unavailable"
    }

    /// Every operation's name, as calls are counted and traced.
    public static let operations: [String] = Operation.allCases.map(\.rawValue)

    public init(
        hsm: HSM, keys: MerchantKeyStore, configuration: AppleGatewayConfiguration, logger: Logger,
        requestObserver: (@Sendable (_ operation: String, _ outcome: Outcome) -> Void)? = nil
    ) {
        self.hsm = hsm
        self.keys = keys
        self.configuration = configuration
        self.logger = logger
        self.requestObserver = requestObserver
        self.connections = IdentityConnections(hsm: hsm, configuration: configuration, logger: logger)
    }

    /// Which TLS versions this client offers with the HSM's identity keys.
    public var tlsVersions: String {
        hsm.capabilities.rsaPSS ? "TLS 1.2 and 1.3" : "TLS 1.2"
    }

    public func shutdown() async {
        await connections.shutdown()
    }

    // MARK: The identity

    /// The newest identity certificate of the merchant valid now: active key, identity purpose,
    /// RSA, `notValidBefore ≤ now ≤ notValidAfter`; the newest `notValidBefore` wins.
    public func identityCredential(for merchantID: String) async throws(AppleGatewayError) -> IdentityCredential {
        guard GatewayField.isIdentifier(merchantID, maximum: 128) else {
            throw AppleGatewayError(.invalidRequest, "the merchant id must be 1 to 128 letters, digits, dots, hyphens or underscores")
        }
        let now = keys.now
        if let cached = credentials.withLock({ $0[merchantID] }),
            cached.readAt.duration(to: .now) < Self.credentialCacheLifetime, Self.isValid(cached.credential.certificate, at: now)
        {
            return cached.credential
        }
        let all: [MerchantKey]
        do {
            all = try await keys.list()
        } catch {
            // Retried like an HSM failure; the message says which of the two failed.
            let source = error.code == .databaseUnavailable || error.code == .storage ? "their records in the database" : "the HSM"
            throw AppleGatewayError(.hsmUnavailable, "the identity keys could not be read (\(source)): \(error.message)")
        }
        let identities = all.filter { $0.merchantID == merchantID && $0.purpose == .identity }
        let usable = identities.filter { key in
            guard key.state == .active, key.key.algorithm == .rsa2048, let certificate = key.certificate else { return false }
            return Self.isValid(certificate, at: now)
        }
        let chosen = usable.max { a, b in
            let (x, y) = (a.certificate!, b.certificate!)
            return (x.notValidBefore, x.notValidAfter, a.id) < (y.notValidBefore, y.notValidAfter, b.id)
        }
        guard let chosen, let certificate = chosen.certificate else {
            throw AppleGatewayError(.identityUnavailable, Self.whyNoIdentity(merchantID, identities, now: now))
        }
        let credential = IdentityCredential(merchantID: merchantID, keyID: chosen.id, certificate: certificate)
        credentials.withLock { $0[merchantID] = (credential, .now) }
        return credential
    }

    private static func isValid(_ certificate: MerchantCertificate, at now: Date) -> Bool {
        certificate.notValidBefore <= now && now <= certificate.notValidAfter
    }

    /// What an operator should do, from what the merchant's identity keys look like.
    private static func whyNoIdentity(_ merchantID: String, _ identities: [MerchantKey], now: Date) -> String {
        let create =
            "create one with `paywarden keys create --merchant-id \(merchantID) --purpose identity`, have Apple sign its CSR, "
            + "and import the certificate with `paywarden keys import-certificate`"
        if identities.isEmpty { return "merchant \(merchantID) has no Merchant Identity key; \(create)" }
        if let pending = identities.first(where: { $0.state == .pending }), !identities.contains(where: { $0.state == .active }) {
            return "merchant \(merchantID)'s identity key \(pending.id) is waiting for its certificate: import the Merchant Identity "
                + "certificate Apple issued with `paywarden keys import-certificate`"
        }
        let active = identities.filter { $0.state == .active }.compactMap(\.certificate)
        if let latest = active.map(\.notValidAfter).max(), latest < now {
            return "merchant \(merchantID)'s Merchant Identity certificates have all expired (the last on "
                + "\(latest.formatted(.iso8601))); \(create)"
        }
        if !active.isEmpty {
            return "merchant \(merchantID) has no Merchant Identity certificate valid now (not yet valid); wait, or \(create)"
        }
        return "merchant \(merchantID) has no active Merchant Identity key (only retired ones); \(create)"
    }

    // MARK: Merchant token calls

    /// The details of a merchant token event (§3): Apple's answer is the only trusted source.
    public func merchantTokenEvent(merchantID: String, eventID: String) async throws(AppleGatewayError) -> MerchantTokenEventDetails {
        let credential = try await identityCredential(for: merchantID)
        return try await merchantTokenEvent(merchantID: merchantID, eventID: eventID, credential: credential)
    }

    func merchantTokenEvent(
        merchantID: String, eventID: String, credential: IdentityCredential
    ) async throws(AppleGatewayError) -> MerchantTokenEventDetails {
        guard GatewayField.isIdentifier(eventID, maximum: 128) else {
            throw AppleGatewayError(.invalidRequest, "the event id must be 1 to 128 letters, digits, dots, hyphens or underscores")
        }
        let url = try merchantTokenURL(merchantID, "event/\(eventID)")
        let body = try await send(
            .eventFetch, credential: credential, method: .GET, url: url, body: nil, expecting: [200], metadata: ["event-id": "\(eventID)"])
        return try MerchantTokenEventDetails(json: body)
    }

    /// Tells Apple the merchant no longer uses the token: 204 (200 accepted too).
    public func unlink(merchantID: String, merchantTokenID: String) async throws(AppleGatewayError) {
        try Self.checkTokenIdentifier(merchantTokenID)
        let credential = try await identityCredential(for: merchantID)
        let url = try merchantTokenURL(merchantID, "unlink")
        _ = try await send(
            .unlink, credential: credential, method: .POST, url: url,
            body: CanonicalJSON.encode(["merchantTokenIdentifier": merchantTokenID]), expecting: [200, 204], metadata: [:])
    }

    /// Sets where Apple sends the token's life-cycle notifications: https, at most 2048 bytes.
    public func updateNotificationURL(merchantID: String, merchantTokenID: String, url notificationURL: String)
        async throws(AppleGatewayError)
    {
        try Self.checkTokenIdentifier(merchantTokenID)
        guard notificationURL.utf8.count <= 2048, notificationURL.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
            let parsed = URLComponents(string: notificationURL), parsed.scheme?.lowercased() == "https",
            let host = parsed.host, !host.isEmpty, parsed.user == nil, parsed.password == nil
        else {
            throw AppleGatewayError(.invalidRequest, "tokenNotificationURL must be an https URL of at most 2048 bytes")
        }
        let credential = try await identityCredential(for: merchantID)
        let url = try merchantTokenURL(merchantID, "updateMerchantMetadata")
        let body = CanonicalJSON.encode([
            "merchantTokenIdentifier": merchantTokenID, "merchantMetadata": ["tokenNotificationURL": notificationURL],
        ])
        _ = try await send(
            .updateMetadata, credential: credential, method: .POST, url: url, body: body, expecting: [200, 204], metadata: [:])
    }

    // MARK: Merchant validation

    /// Apple Pay on the web merchant validation (§6): the validation URL passes the host policy
    /// before any connection is made; Apple's session object comes back unchanged.
    public func paymentSession(_ request: PaymentSessionRequest) async throws(AppleGatewayError) -> [UInt8] {
        let endpoint = try configuration.hostPolicy.validationEndpoint(request.validationURL)
        let credential = try await identityCredential(for: request.merchantIdentifier)
        let body = try await send(
            .paymentSession, credential: credential, method: .POST, url: endpoint.absoluteString, body: request.body, expecting: [200],
            metadata: ["host": "\(endpoint.host ?? "")"])
        guard CanonicalJSON.object(body) != nil else {
            throw AppleGatewayError(.responseInvalid, "Apple's merchant session is not a JSON object", appleStatus: 200)
        }
        return body
    }

    // MARK: Sending

    enum Operation: String, CaseIterable {
        case eventFetch = "merchant-token-event"
        case unlink = "merchant-token-unlink"
        case updateMetadata = "merchant-token-update-metadata"
        case paymentSession = "payment-session"
        case registerMerchant = "web-merchant-register"
        case unregisterMerchant = "web-merchant-unregister"
        case merchantDetails = "web-merchant-details"
        case merchantTokenPublicKey = "merchant-token-public-key"
        case usageDataNotification = "merchant-token-usage-notify"
    }

    func merchantTokenURL(_ merchantID: String, _ tail: String) throws(AppleGatewayError) -> String {
        guard GatewayField.isIdentifier(merchantID, maximum: 128) else {
            throw AppleGatewayError(.invalidRequest, "the merchant id must be 1 to 128 letters, digits, dots, hyphens or underscores")
        }
        return "\(configuration.origin)/paymentservices/v1/merchantId/\(merchantID)/merchantToken/\(tail)"
    }

    static func checkTokenIdentifier(_ identifier: String) throws(AppleGatewayError) {
        guard GatewayField.isPrintableToken(identifier, maximum: 64) else {
            throw AppleGatewayError(.invalidRequest, "merchantTokenIdentifier must be 1 to 64 printable ASCII characters")
        }
    }

    /// One request: Apple's body when the status is one of `expecting`, else the mapped error.
    func send(
        _ operation: Operation, credential: IdentityCredential, method: HTTPMethod, url: String, body: [UInt8]?,
        expecting: Set<Int>, metadata: Logger.Metadata
    ) async throws(AppleGatewayError) -> [UInt8] {
        let answer = try await exchange(
            operation, credential: credential, method: method, url: url, body: body, expecting: expecting, metadata: metadata)
        if expecting.contains(answer.status) { return answer.body }
        throw Self.error(status: answer.status, body: answer.body, operation: operation)
    }

    /// Apple's answer to one request, whatever its status (logged as accepted when it is one of
    /// `expecting`); only a transport failure or an oversized body throws.
    func exchange(
        _ operation: Operation, credential: IdentityCredential, method: HTTPMethod, url: String, body: [UInt8]?,
        expecting: Set<Int>, metadata: Logger.Metadata
    ) async throws(AppleGatewayError) -> (status: Int, headers: HTTPHeaders, body: [UInt8]) {
        let entry = try connections.entry(for: credential)
        let requestID = UUID().uuidString.lowercased()
        var request = HTTPClientRequest(url: url)
        request.method = method
        // Apple requires both, even on a GET.
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "x-request-id", value: requestID)
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        // A client span named by the operation only: the URL carries merchant-token ids.
        let span = startSpan("apple.\(operation.rawValue)", ofKind: .client)
        defer { span.end() }
        span.attributes["http.request.method"] = method.rawValue
        span.attributes["paywarden.apple.operation"] = operation.rawValue
        TraceContextHeadersInjector.inject(span, into: &request.headers)

        var logMetadata = metadata
        logMetadata["operation"] = "\(operation.rawValue)"
        logMetadata["merchant-id"] = "\(credential.merchantID)"
        logMetadata["request-id"] = "\(requestID)"
        let start = ContinuousClock.now
        func elapsed() -> Logger.MetadataValue { "\((start.duration(to: .now) / .milliseconds(1)).rounded())" }
        var outcome = Outcome.unreachable
        defer { requestObserver?(operation.rawValue, outcome) }

        let response: HTTPClientResponse
        do {
            response = try await entry.client.execute(request, timeout: TimeAmount(configuration.requestTimeout), logger: logger)
        } catch {
            span.setStatus(SpanStatus(code: .error))
            logMetadata["duration-ms"] = elapsed()
            if let hsmError = entry.signingKey.signingFailure(since: start) {
                outcome = .hsmUnavailable
                logger.warning("Apple gateway call failed: the HSM could not sign the handshake", metadata: logMetadata)
                throw AppleGatewayError(
                    .hsmUnavailable, "the HSM could not sign the TLS handshake with identity key \(credential.keyID): \(hsmError)")
            }
            logMetadata["error"] = "\(error)"
            logger.warning("Apple gateway call failed: no answer", metadata: logMetadata)
            throw AppleGatewayError(.upstreamUnavailable, "Apple's gateway could not be reached: \(Self.describe(error))")
        }
        let status = Int(response.status.code)
        logMetadata["status"] = "\(status)"
        span.attributes["http.response.status_code"] = status
        if !expecting.contains(status) { span.setStatus(SpanStatus(code: .error)) }

        let bytes: [UInt8]
        do {
            bytes = Array((try await response.body.collect(upTo: configuration.maxResponseBytes)).readableBytesView)
        } catch is NIOTooManyBytesError {
            outcome = .invalidResponse
            logMetadata["duration-ms"] = elapsed()
            logger.warning("Apple gateway answer too large", metadata: logMetadata)
            throw AppleGatewayError(
                .responseInvalid, "Apple's answer is larger than \(configuration.maxResponseBytes) bytes", appleStatus: status)
        } catch {
            logMetadata["duration-ms"] = elapsed()
            logMetadata["error"] = "\(error)"
            logger.warning("Apple gateway answer cut short", metadata: logMetadata)
            throw AppleGatewayError(
                .upstreamUnavailable, "Apple's answer was cut short: \(Self.describe(error))", appleStatus: status)
        }
        logMetadata["duration-ms"] = elapsed()
        outcome =
            switch status {
            case _ where expecting.contains(status): .ok
            case 408, 429: .throttled
            case 400..<500: .http4xx
            case 500..<600: .http5xx
            default: .invalidResponse
            }

        if expecting.contains(status) {
            logger.info("Apple gateway call", metadata: logMetadata)
        } else {
            if let correlation = response.headers.first(name: "x-keystone-correlationid") {
                logMetadata["apple-correlation-id"] = "\(GatewayField.sanitized(correlation, limit: 128))"
            }
            logger.warning("Apple gateway call refused", metadata: logMetadata)
        }
        return (status, response.headers, bytes)
    }

    /// Apple's status → what the caller does about it.
    static func error(status: Int, body: [UInt8], operation: Operation) -> AppleGatewayError {
        let apple = appleErrorDetail(body)
        switch status {
        case 300...399:
            return AppleGatewayError(
                .appleRefused, "Apple's gateway answered with a redirect (HTTP \(status)); redirects are never followed",
                appleStatus: status)
        case 404 where operation == .eventFetch:
            return AppleGatewayError(
                .eventNotFound, "Apple has no such event (HTTP 404; event details can be fetched for seven days)\(apple)",
                appleStatus: status)
        case 408, 429, 500...599:
            return AppleGatewayError(.upstreamUnavailable, "Apple's gateway is unavailable (HTTP \(status))\(apple)", appleStatus: status)
        case 400...499:
            return AppleGatewayError(.appleRefused, "Apple refused the request (HTTP \(status))\(apple)", appleStatus: status)
        default:
            return AppleGatewayError(.responseInvalid, "Apple's gateway answered with unexpected HTTP \(status)", appleStatus: status)
        }
    }

    /// Apple's `ErrorResponse`, sanitised: ": statusCode …, subStatusCode …: message", or "".
    static func appleErrorDetail(_ body: [UInt8]) -> String {
        guard let object = CanonicalJSON.object(body) else { return "" }
        var parts: [String] = []
        for key in ["statusCode", "subStatusCode"] {
            if let value = object[key], !(value is NSNull) {
                parts.append("\(key) \(GatewayField.sanitized(String(describing: value), limit: 32))")
            }
        }
        if let message = object["errorMessage"] as? String, !message.isEmpty {
            parts.append("\"\(GatewayField.sanitized(message))\"")
        }
        return parts.isEmpty ? "" : ": " + parts.joined(separator: ", ")
    }

    /// A transport error in a line: NIO and AsyncHTTPClient describe theirs without secrets.
    static func describe(_ error: any Error) -> String {
        GatewayField.sanitized(String(describing: error), limit: 300)
    }
}
