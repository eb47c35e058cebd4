import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PaywardenSandbox
import SwiftASN1
import Synchronization
import X509

/// A stand-in for Apple's Apple Pay gateway (docs/apple-pay.md, "Fetching an event"): real HTTPS on loopback
/// that requires a client certificate issued by the given CA, as Apple requires a Merchant
/// Identity certificate from WWDR. It serves the merchant-token routes and merchant
/// validation, records every request with its TLS details, and fails, redirects or goes down
/// on demand.
public final class AppleGatewayStandIn: Sendable {
    /// The CA of the stand-in's server certificate (for "localhost"): trust it in the client.
    public let serverCA: NIOSSLCertificate
    public let serverCADER: [UInt8]
    private let sslContext: NIOSSLContext
    let state = Mutex(State())
    /// The merchant tokens' "devices" of the usage-information routes.
    let usageInformation = Mutex(UsageInformationDevices())

    struct State: Sendable {
        var listener: StandInListener?
        var events: [String: StandInResponse] = [:]
        var failures = (count: 0, status: 500)
        var redirects = (count: 0, location: "")
        var requests: [RecordedRequest] = []
        var webMerchants = WebMerchantRegistry()
        /// Answers held back, by the end of the request's path.
        var holds: [(pathSuffix: String, gate: StandInGate)] = []
    }

    private init(serverCA: NIOSSLCertificate, serverCADER: [UInt8], sslContext: NIOSSLContext) {
        self.serverCA = serverCA
        self.serverCADER = serverCADER
        self.sslContext = sslContext
    }

    /// Starts on 127.0.0.1 on a free port, requiring client certificates issued by `clientCA`.
    public static func start(clientCA: Certificate, maximumTLSVersion: TLSVersion = .tlsv13) async throws -> AppleGatewayStandIn {
        try await start(
            clientCA: clientCA, identity: try LoopbackServerIdentity(caName: "Paywarden Stand-in Gateway CA"),
            maximumTLSVersion: maximumTLSVersion)
    }

    /// Starts on 127.0.0.1 on `port` with the development PKI's server identity (the tour: a
    /// service configured before it started trusts that identity's CA).
    public static func start(clientCA: Certificate, port: Int, pki: DevelopmentPKI) async throws -> AppleGatewayStandIn {
        let identity = try LoopbackServerIdentity(
            caPEM: pki.serverCAPEM, certificatePEM: pki.serverCertificatePEM, keyPEM: pki.serverKeyPEM)
        return try await start(clientCA: clientCA, identity: identity, port: port)
    }

    private static func start(
        clientCA: Certificate, identity: LoopbackServerIdentity, port: Int = 0, maximumTLSVersion: TLSVersion = .tlsv13
    ) async throws -> AppleGatewayStandIn {
        var tls = identity.configuration
        tls.maximumTLSVersion = maximumTLSVersion
        // A server's "no hostname verification" still requires and verifies a client certificate.
        tls.certificateVerification = .noHostnameVerification
        tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: try der(clientCA), format: .der)])
        let caDER = identity.caDER
        let standIn = AppleGatewayStandIn(
            serverCA: try NIOSSLCertificate(bytes: caDER, format: .der), serverCADER: caDER,
            sslContext: try NIOSSLContext(configuration: tls))
        let listener = try await StandInListener.start(port: port, sslContext: standIn.sslContext) { head, body, context in
            (standIn.respond(to: Self.record(head, body: body, context: context)), .zero)
        }
        standIn.state.withLock { $0.listener = listener }
        return standIn
    }

    private static func der(_ certificate: Certificate) throws -> [UInt8] { try LoopbackServerIdentity.der(certificate) }

    private var listener: StandInListener { state.withLock { $0.listener! } }

    public var port: Int { listener.port }

    /// https://localhost:PORT: the certificate names localhost, and only 127.0.0.1 listens.
    public var baseURL: URL { URL(string: "https://localhost:\(port)")! }

    /// Writes the server CA as PEM into `directory` and returns the file's path.
    public func writeServerCA(to directory: String) throws -> String {
        let path = directory + "/apple-gateway-stand-in-ca-\(port).pem"
        try Data(serverCADER.pem("CERTIFICATE").utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    // MARK: Controls

    /// What `GET …/merchantId/{merchantID}/merchantToken/event/{eventID}` answers.
    public func setEvent(_ eventID: String, merchantID: String, _ response: StandInResponse) {
        state.withLock { $0.events["\(merchantID)/\(eventID)"] = response }
    }

    /// The next `count` requests get `status` with an `ErrorResponse`.
    public func failNext(_ count: Int, status: Int = 500) {
        state.withLock { $0.failures = (count, status) }
    }

    /// Requests whose path (without its query) ends with `pathSuffix` (`/paymentservices/registerMerchant`,
    /// `/merchantToken/publicKey`) are acted on as they arrive and answered once the gate returned
    /// is released: Apple has done it, the caller does not know yet.
    public func holdAnswers(toPathsEndingWith pathSuffix: String) -> StandInGate {
        let gate = StandInGate()
        state.withLock { $0.holds.append((pathSuffix, gate)) }
        return gate
    }

    /// The next `count` requests get a 302 to `location`.
    public func redirectNext(_ count: Int, to location: String) {
        state.withLock { $0.redirects = (count, location) }
    }

    /// Every request received so far, oldest first.
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }

    public func clearRequests() {
        state.withLock { $0.requests = [] }
    }

    /// Stops listening and drops every open connection: the gateway is down.
    public func stop() async throws { try await listener.stop() }

    /// Listens again on the same port.
    public func restart() async throws { try await listener.restart() }

    // MARK: Answering

    /// Records `request` and decides the answer: armed failures and redirects first, then the
    /// routes Apple serves.
    func respond(to request: RecordedRequest) -> StandInResponse {
        var answer = answer(request)
        let path = request.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        answer.gate = state.withLock { $0.holds.last { path.hasSuffix($0.pathSuffix) }?.gate }
        return answer
    }

    private func answer(_ request: RecordedRequest) -> StandInResponse {
        state.withLock { state in
            state.requests.append(request)
            if state.failures.count > 0 {
                state.failures.count -= 1
                return .error(status: state.failures.status, message: "the stand-in was told to fail", subStatusCode: "STAND_IN")
            }
            if state.redirects.count > 0 {
                state.redirects.count -= 1
                return StandInResponse(status: 302, headers: [("Location", state.redirects.location)])
            }
            if let answer = Self.routeWebMerchant(request, registry: &state.webMerchants) { return answer }
            return usageInformationRoute(request) ?? Self.route(request, events: state.events)
        }
    }
}
