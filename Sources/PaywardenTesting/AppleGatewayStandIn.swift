import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SwiftASN1
import Synchronization
import X509

/// A stand-in for Apple's Apple Pay gateway (merchant-tokens.md §3): real HTTPS on loopback
/// that requires a client certificate issued by the given CA, as Apple requires a Merchant
/// Identity certificate from WWDR. It serves the merchant-token routes and merchant
/// validation, records every request with its TLS details, and fails, redirects or goes down
/// on demand.
public final class AppleGatewayStandIn: Sendable {
    /// The CA of the stand-in's server certificate (for "localhost"): trust it in the client.
    public let serverCA: NIOSSLCertificate
    public let serverCADER: [UInt8]
    private let sslContext: NIOSSLContext
    private let state = Mutex(State())

    struct State: Sendable {
        var port = 0
        var server: Channel?
        var connections: [ObjectIdentifier: Channel] = [:]
        var events: [String: StandInResponse] = [:]
        var failures = (count: 0, status: 500)
        var redirects = (count: 0, location: "")
        var requests: [RecordedRequest] = []
    }

    private init(serverCA: NIOSSLCertificate, serverCADER: [UInt8], sslContext: NIOSSLContext) {
        self.serverCA = serverCA
        self.serverCADER = serverCADER
        self.sslContext = sslContext
    }

    /// Starts on 127.0.0.1 on a free port, requiring client certificates issued by `clientCA`.
    public static func start(clientCA: Certificate, maximumTLSVersion: TLSVersion = .tlsv13) async throws -> AppleGatewayStandIn {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            CommonName("Paywarden Stand-in Gateway CA")
            OrganizationName("Paywarden Test PKI")
        }
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(7 * 86_400),
            issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
                SubjectKeyIdentifier(hash: Certificate.PublicKey(caKey.publicKey))
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(7 * 86_400),
            issuer: caName, subject: try DistinguishedName { CommonName("localhost") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.dnsName("localhost")])
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: try der(server), format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(serverKey.pemRepresentation.utf8), format: .pem))
        )
        tls.minimumTLSVersion = .tlsv12
        tls.maximumTLSVersion = maximumTLSVersion
        // A server's "no hostname verification" still requires and verifies a client certificate.
        tls.certificateVerification = .noHostnameVerification
        tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: try der(clientCA), format: .der)])
        let caDER = try der(ca)
        let standIn = AppleGatewayStandIn(
            serverCA: try NIOSSLCertificate(bytes: caDER, format: .der), serverCADER: caDER,
            sslContext: try NIOSSLContext(configuration: tls))
        let channel = try await standIn.bind(port: 0)
        standIn.state.withLock {
            $0.server = channel
            $0.port = channel.localAddress?.port ?? 0
        }
        TestResources.track(cleanup: { [standIn] in standIn.closeAll() })
        return standIn
    }

    private static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    public var port: Int { state.withLock { $0.port } }

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
    public func stop() async throws {
        let (server, connections) = state.withLock { state in
            defer {
                state.server = nil
                state.connections = [:]
            }
            return (state.server, Array(state.connections.values))
        }
        for connection in connections { try? await connection.close() }
        try await server?.close()
    }

    /// Listens again on the same port.
    public func restart() async throws {
        let channel = try await bind(port: port)
        state.withLock { $0.server = channel }
    }

    /// For the test-resource cleanup: closes without waiting.
    private func closeAll() {
        let channels = state.withLock { state in
            defer {
                state.server = nil
                state.connections = [:]
            }
            return Array(state.connections.values) + (state.server.map { [$0] } ?? [])
        }
        for channel in channels { channel.close(promise: nil) }
    }

    private func bind(port: Int) async throws -> Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(StandInHandler(standIn: self))
                    track(channel)
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
    }

    private func track(_ channel: Channel) {
        let id = ObjectIdentifier(channel)
        state.withLock { $0.connections[id] = channel }
        channel.closeFuture.whenComplete { [self] _ in state.withLock { _ = $0.connections.removeValue(forKey: id) } }
    }

    // MARK: Answering

    /// Records `request` and decides the answer: armed failures and redirects first, then the
    /// routes Apple serves.
    func respond(to request: RecordedRequest) -> StandInResponse {
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
            return Self.route(request, events: state.events)
        }
    }
}
