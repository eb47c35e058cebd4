import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ProcessorMessages
import SwiftASN1
import Synchronization
import X509

/// A stand-in for a processor's authorization engine (the relay's upstream,
/// docs/processors.md): real HTTP, or HTTPS with a certificate for "localhost" from a CA of its own, on
/// loopback. It parses every cnpAPI request it receives with the strict parser (and every
/// MercuryPay one under `/PaymentsAPI/`, ``ReceivedMercuryPayRequest``, and every Radial one under
/// `/v1.0/stores/`, ``ReceivedRadialRequest``), records it with what it found
/// wrong (a registration ID, an encrypted token, card data missing from `card`/`cardholderAuthentication`),
/// and answers an approval (000), a decline, an HTTP error or an envelope error; it can go down
/// (``stop()``) or be slow (``setDelay(_:)``).
public final class ProcessorUpstreamStandIn: Sendable {
    /// What the stand-in answers the next requests.
    public enum Answer: Sendable, Hashable {
        /// `response` 000, "Approved", an auth code.
        case approve
        /// An approval that also hands back the card data received, in the given form (a
        /// compromised upstream): the relay must keep it from the client.
        case approveEchoing(CardDataEcho)
        /// A decline with its cnpAPI response code and message (110 "Insufficient Funds").
        case decline(code: String, message: String)
        /// A bare HTTP status with a text body.
        case httpError(Int)
        /// A `response="1"` envelope (the upstream refused the message).
        case envelopeError(String)
        /// HTTP 200 with a body that is not XML.
        case garbage
        /// The request is read, then the connection closed without an answer.
        case dropConnection

        /// True for the approvals.
        var approves: Bool {
            switch self {
            case .approve, .approveEchoing: true
            default: false
            }
        }
    }

    /// The server CA (DER) when serving HTTPS.
    public let serverCADER: [UInt8]?
    private let sslContext: NIOSSLContext?
    let state = Mutex(State())

    struct State: Sendable {
        var listener: StandInListener?
        var answer = Answer.approve
        var delay = Duration.zero
        var received: [ReceivedCnpRequest] = []
        var receivedMercuryPay: [ReceivedMercuryPayRequest] = []
        var receivedRadial: [ReceivedRadialRequest] = []
        /// False under load: requests are answered and counted, not kept.
        var keepsRequests = true
        var answered = 0
        /// What each request's connection presented as client certificate, when it did.
        var clientCertificates: [[UInt8]] = []
        /// The client certificates (DER) the stand-in's CA issued: those it trusts unless
        /// ``trustedClientCertificates`` narrows them.
        var issuedClientCertificates: Set<[UInt8]> = []
        /// When set, the only client certificates accepted (a processor's changeover of client keys).
        var trustedClientCertificates: Set<[UInt8]>?
        /// `HEAD` requests answered (405, not kept).
        var headRequests = 0
        /// Each request's W3C `traceparent` header, when it carried one (tracing's propagation).
        var traceparents: [String] = []
        /// Each request's `tracestate` header, when it carried one.
        var tracestates: [String] = []
    }

    private let identity: LoopbackServerIdentity?

    private init(serverCADER: [UInt8]?, sslContext: NIOSSLContext?, identity: LoopbackServerIdentity?) {
        self.serverCADER = serverCADER
        self.sslContext = sslContext
        self.identity = identity
    }

    /// Starts on 127.0.0.1 on `port` (a free one when 0), over HTTPS when `tls` (then trust
    /// ``writeServerCA(to:)``), requiring a client certificate from its own CA when
    /// `requireClientCertificate` (``writeClientIdentity(to:)`` writes one).
    public static func start(port: Int = 0, tls: Bool = false, requireClientCertificate: Bool = false) async throws
        -> ProcessorUpstreamStandIn
    {
        let identity = tls ? try LoopbackServerIdentity(caName: "Paywarden Stand-in Processor CA") : nil
        return try await start(port: port, identity: identity, requireClientCertificate: requireClientCertificate)
    }

    /// Starts on 127.0.0.1 on `port` over HTTPS with the development PKI's server identity (the
    /// tour: a service configured before it started trusts that identity's CA).
    public static func start(port: Int, pki: DevelopmentPKI) async throws -> ProcessorUpstreamStandIn {
        let identity = try LoopbackServerIdentity(
            caPEM: pki.serverCAPEM, certificatePEM: pki.serverCertificatePEM, keyPEM: pki.serverKeyPEM)
        return try await start(port: port, identity: identity, requireClientCertificate: false)
    }

    private static func start(port: Int, identity: LoopbackServerIdentity?, requireClientCertificate: Bool) async throws
        -> ProcessorUpstreamStandIn
    {
        let standIn: ProcessorUpstreamStandIn
        if let identity {
            var configuration = identity.configuration
            if requireClientCertificate {
                configuration.trustRoots = .certificates([try NIOSSLCertificate(bytes: identity.caDER, format: .der)])
                configuration.certificateVerification = .noHostnameVerification
            }
            standIn = ProcessorUpstreamStandIn(
                serverCADER: identity.caDER, sslContext: try NIOSSLContext(configuration: configuration), identity: identity)
        } else {
            standIn = ProcessorUpstreamStandIn(serverCADER: nil, sslContext: nil, identity: nil)
        }
        // A client certificate is trusted when the stand-in's CA issued it (the CA check, done here
        // so that a test can narrow it to some of them).
        let trusts: @Sendable ([UInt8]) -> Bool = { [standIn] leaf in
            standIn.state.withLock { ($0.trustedClientCertificates ?? $0.issuedClientCertificates).contains(leaf) }
        }
        let accepts = requireClientCertificate ? trusts : nil
        let listener = try await StandInListener.start(port: port, sslContext: standIn.sslContext, acceptsClientCertificate: accepts) {
            head, body, context in
            // A request that does nothing, as a relay checking which client key is accepted sends:
            // not a message of any format, so neither kept nor counted.
            if head.method == .HEAD {
                standIn.state.withLock { $0.headRequests += 1 }
                return (StandInResponse(status: 405, headers: [("Allow", "POST")]), .zero)
            }
            let tls = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self)
            if let peer = (try? tls?.peerCertificate?.toDERBytes()) ?? nil {
                standIn.state.withLock { $0.clientCertificates.append(peer) }
            }
            if let traceparent = head.headers["traceparent"].first { standIn.state.withLock { $0.traceparents.append(traceparent) } }
            if let tracestate = head.headers["tracestate"].first { standIn.state.withLock { $0.tracestates.append(tracestate) } }
            if head.uri.hasPrefix(ReceivedRadialRequest.pathPrefix) {
                return standIn.respondRadial(path: head.uri, body: body, apiKey: head.headers["apiKey"].first)
            }
            if head.uri.hasPrefix(ReceivedMercuryPayRequest.pathPrefix) {
                return standIn.respondMercuryPay(path: head.uri, body: body, authorization: head.headers["Authorization"].first)
            }
            return standIn.respond(path: head.uri, body: body)
        }
        standIn.state.withLock { $0.listener = listener }
        return standIn
    }

    private var listener: StandInListener { state.withLock { $0.listener! } }

    public var port: Int { listener.port }

    /// `http://127.0.0.1:PORT`, or `https://localhost:PORT` (the certificate names localhost).
    public var baseURL: URL { URL(string: sslContext == nil ? "http://127.0.0.1:\(port)" : "https://localhost:\(port)")! }

    /// Writes the server CA as PEM into `directory` and returns the file's path.
    public func writeServerCA(to directory: String) throws -> String {
        guard let serverCADER else { throw CocoaError(.featureUnsupported) }
        let path = directory + "/processor-stand-in-ca-\(port).pem"
        let base64 = Data(serverCADER).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        try Data("-----BEGIN CERTIFICATE-----\n\(base64)\n-----END CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Writes a client certificate from the stand-in's CA and its key into `directory`; returns the
    /// certificate's and the key's paths.
    public func writeClientIdentity(to directory: String) throws -> (certificate: String, key: String) {
        guard let identity else { throw CocoaError(.featureUnsupported) }
        let (certificatePEM, keyPEM) = try identity.clientIdentity(commonName: "Paywarden relay")
        let der = try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem).toDERBytes()
        state.withLock { _ = $0.issuedClientCertificates.insert(der) }
        let certificate = directory + "/processor-client-\(port).pem"
        let key = directory + "/processor-client-\(port).key"
        try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: certificate))
        try OwnerOnlyFile.write(keyPEM, to: key)
        return (certificate, key)
    }

    /// A client certificate (DER) from the stand-in's CA for the key of `csrPEM`, as a processor
    /// issues one for the CSR of `paywarden keys create --purpose upstream`.
    public func issueClientCertificate(csrPEM: String) throws -> [UInt8] {
        guard let identity else { throw CocoaError(.featureUnsupported) }
        let request = try CertificateSigningRequest(pemEncoded: csrPEM)
        let der = try identity.clientCertificate(for: request.publicKey, commonName: "Paywarden relay")
        state.withLock { _ = $0.issuedClientCertificates.insert(der) }
        return der
    }

    /// From now on the stand-in accepts only these client certificates (DER), as a processor that
    /// has changed over to a new client certificate does; nil trusts every one its CA issued again.
    /// Open connections are closed, as a processor reloading its trust store closes them.
    public func trustOnlyClientCertificates(_ certificates: [[UInt8]]?) {
        state.withLock { $0.trustedClientCertificates = certificates.map(Set.init) }
        listener.closeConnections()
    }

    /// How many `HEAD` requests were answered.
    public var headRequestCount: Int { state.withLock { $0.headRequests } }

    /// The client certificates (DER) the stand-in's connections presented, oldest first.
    public var clientCertificates: [[UInt8]] { state.withLock { $0.clientCertificates } }

    // MARK: Controls

    /// What every following request is answered.
    public func setAnswer(_ answer: Answer) { state.withLock { $0.answer = answer } }

    /// How long the stand-in waits before answering.
    public func setDelay(_ delay: Duration) { state.withLock { $0.delay = delay } }

    /// The `traceparent` header of every request that carried one, oldest first.
    public var traceparents: [String] { state.withLock { $0.traceparents } }

    /// The `tracestate` header of every request that carried one, oldest first.
    public var tracestates: [String] { state.withLock { $0.tracestates } }

    /// Every cnpAPI request received so far, oldest first.
    public var received: [ReceivedCnpRequest] { state.withLock { $0.received } }

    /// Every MercuryPay request received so far, oldest first.
    public var receivedMercuryPay: [ReceivedMercuryPayRequest] { state.withLock { $0.receivedMercuryPay } }

    /// Every Radial request received so far, oldest first.
    public var receivedRadial: [ReceivedRadialRequest] { state.withLock { $0.receivedRadial } }

    /// Whether the requests received from now on are kept for ``received`` and its kind (a test
    /// inspects them) or only counted (a load test sends hundreds of thousands).
    public func keepRequests(_ keep: Bool) { state.withLock { $0.keepsRequests = keep } }

    /// How many requests were answered so far, kept or not.
    public var answeredCount: Int { state.withLock { $0.answered } }

    public func clearReceived() {
        state.withLock {
            $0.received = []
            $0.receivedMercuryPay = []
            $0.receivedRadial = []
        }
    }

    /// Stops listening and drops every open connection: the upstream is down.
    public func stop() async throws { try await listener.stop() }

    /// Listens again on the same port after ``stop()``: the processor is back.
    public func restart() async throws { try await listener.restart() }

    // MARK: Answering

    /// Records the request and returns the answer and how long to wait before sending it.
    func respond(path: String, body: [UInt8]) -> (StandInResponse, Duration) {
        record(ReceivedCnpRequest(path: path, body: body), in: \.received, answering: Self.response)
    }

    /// Appends `received` to its format's list and answers it as the current answer and delay say.
    func record<Received>(
        _ received: Received, in list: WritableKeyPath<State, [Received]>, answering: (Received, Answer) -> StandInResponse
    ) -> (StandInResponse, Duration) {
        state.withLock { state in
            if state.keepsRequests { state[keyPath: list].append(received) }
            state.answered += 1
            return (answering(received, state.answer), state.delay)
        }
    }

    static func response(to request: ReceivedCnpRequest, answer: Answer) -> StandInResponse {
        let dialect = request.parsed?.dialect ?? .cnp
        let root = dialect.responseRootName
        var echo = (elements: "", prolog: "", epilog: "")
        if case .approveEchoing(let form) = answer, let number = request.accountNumber {
            echo = form.xml(accountNumber: number, cryptogram: request.cryptogram ?? "")
        }
        let head =
            #"<?xml version="1.0" encoding="UTF-8"?>\#(echo.prolog)<\#(root) version="12.10" xmlns="\#(dialect.namespaceURI)""#
        func xml(_ text: String) -> StandInResponse {
            StandInResponse(status: 200, body: Array(text.utf8), headers: [("Content-Type", "text/xml; charset=utf-8")])
        }
        guard let parsed = request.parsed, request.problems.isEmpty || !answer.approves else {
            let problems = escape(request.problems.joined(separator: "; "))
            return xml(head + #" response="1" message="Error validating xml data against the schema: stand-in: \#(problems)"/>"#)
        }
        if let response = formatFreeAnswer(answer, contentType: "text/xml") { return response }
        if case .envelopeError(let message) = answer { return xml(head + #" response="1" message="\#(escape(message))"/>"#) }
        let (code, message) =
            switch answer {
            case .decline(let code, let message): (code, message)
            default: ("000", "Approved")
            }
        let name = parsed.transaction.name + "Response"
        var attributes = ""
        for attribute in ["id", "reportGroup", "customerId"] {
            if let value = request.transactionAttribute(attribute) { attributes += #" \#(attribute)="\#(escape(value))""# }
        }
        var fields =
            "<\(dialect.transactionIdName)>\(Int.random(in: 100_000_000_000_000_000...999_999_999_999_999_999))"
            + "</\(dialect.transactionIdName)><orderId>\(escape(request.orderId ?? ""))</orderId><response>\(code)</response>"
            + "<responseTime>2026-01-01T00:00:00</responseTime><message>\(escape(message))</message>"
        if code == "000" { fields += "<authCode>123456</authCode>" }
        // The account number as it arrived, so the relay's masking is exercised.
        if let number = request.accountNumber {
            fields += "<accountInformation><type>\(escape(request.cardType ?? "VI"))</type><number>\(number)</number></accountInformation>"
        }
        fields += echo.elements
        return xml(head + #" response="0" message="Valid Format"><\#(name)\#(attributes)>\#(fields)</\#(name)></\#(root)>"# + echo.epilog)
    }

    /// The answers every format gives alike: an HTTP error, a 200 whose body is not the format's,
    /// a dropped connection; nil for the format's own answers.
    static func formatFreeAnswer(_ answer: Answer, contentType: String) -> StandInResponse? {
        switch answer {
        case .httpError(let status):
            StandInResponse(status: status, body: Array("stand-in failure".utf8), headers: [("Content-Type", "text/plain")])
        case .garbage:
            StandInResponse(status: 200, body: Array("not the format at all".utf8), headers: [("Content-Type", contentType)])
        case .dropConnection:
            StandInResponse(status: 0)
        case .approve, .approveEchoing, .decline, .envelopeError:
            nil
        }
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// A cnpAPI request as the stand-in received it: the body, what the strict parser made of it,
/// the card data it found where Worldpay reads it, and what should not have been there.
public struct ReceivedCnpRequest: Sendable {
    public let path: String
    public let body: [UInt8]
    /// The request parsed, or nil when the parser refused it (``problems`` says why).
    public let parsed: CnpOnlineRequest?
    /// `card/number`, `card/expDate`, `card/type` and `cardholderAuthentication/authenticationValue`.
    public let accountNumber: String?
    public let expDate: String?
    public let cardType: String?
    public let cryptogram: String?
    public let orderSource: String?
    /// What a relayed request must never carry, or must carry and does not.
    public let problems: [String]

    public var text: String { String(decoding: body, as: UTF8.self) }
    public var user: String? { parsed?.user }
    public var password: String? { parsed?.password }
    public var orderId: String? { transactionElement?.firstChild(named: "orderId", namespaceURI: namespace)?.text }

    private var namespace: String? { parsed?.dialect.namespaceURI }
    private var transactionElement: ProcessorXML.Element? { parsed?.document.root.childElements.dropFirst().first }

    func transactionAttribute(_ name: String) -> String? { transactionElement?.attribute(name) }

    init(path: String, body: [UInt8]) {
        self.path = path
        self.body = body
        var problems: [String] = []
        let text = String(decoding: body, as: UTF8.self)
        if text.contains("paypageRegistrationId") { problems.append("the body names a paypageRegistrationId") }
        let parsed: CnpOnlineRequest?
        do {
            parsed = try CnpOnlineRequest.parse(body)
        } catch {
            parsed = nil
            problems.append("the request does not parse: \(error.message)")
        }
        self.parsed = parsed
        var found: (number: String?, expDate: String?, type: String?, cryptogram: String?, orderSource: String?)
        if let parsed {
            let namespace = parsed.dialect.namespaceURI
            var elementNames: [String] = []
            var root = parsed.document.root
            root.transformAll { elementNames.append($0.name.localName) }
            if elementNames.contains("applepay") { problems.append("the body holds an applepay element") }
            if elementNames.contains("paypage") { problems.append("the body holds a paypage element") }
            switch parsed.transaction {
            case .authorization(let transaction), .sale(let transaction):
                let element = transaction.element
                found.orderSource = element.firstChild(named: "orderSource", namespaceURI: namespace)?.text
                if let card = element.firstChild(named: "card", namespaceURI: namespace) {
                    found.number = card.firstChild(named: "number", namespaceURI: namespace)?.text
                    found.expDate = card.firstChild(named: "expDate", namespaceURI: namespace)?.text
                    found.type = card.firstChild(named: "type", namespaceURI: namespace)?.text
                    if found.number == nil { problems.append("card has no number") }
                    if found.expDate == nil { problems.append("card has no expDate") }
                }
                found.cryptogram =
                    element.firstChild(named: "cardholderAuthentication", namespaceURI: namespace)?
                    .firstChild(named: "authenticationValue", namespaceURI: namespace)?.text
            case .registerToken, .other:
                break
            }
        }
        accountNumber = found.number
        expDate = found.expDate
        cardType = found.type
        cryptogram = found.cryptogram
        orderSource = found.orderSource
        self.problems = problems
    }
}
