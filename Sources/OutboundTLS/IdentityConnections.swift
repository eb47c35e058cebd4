import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOSSL
import PKCS11
import PaywardenPrimitives
import Synchronization

/// One HTTP client per identity certificate: its TLS configuration carries the certificate and
/// the HSM-backed key, and its connection pool keeps handshakes (each an HSM signature) rare.
///
/// When a merchant's certificate changes (rotation), the old client is shut down once requests
/// already on it have had their time to finish.
final class IdentityConnections: Sendable {
    struct Entry: Sendable {
        let client: HTTPClient
        let signingKey: HSMTLSSigningKey
        /// The certificate's start of validity: the newer certificate of a merchant wins.
        let notValidBefore: Date
    }

    private struct State: Sendable {
        /// By lowercase hex SHA-256 of the certificate DER.
        var byCertificate: [String: Entry] = [:]
        var byMerchant: [String: String] = [:]
        var retiring: [ObjectIdentifier: HTTPClient] = [:]
        var closed = false
    }

    private let hsm: HSM
    private let configuration: AppleGatewayConfiguration
    private let logger: Logger
    private let state = Mutex(State())

    init(hsm: HSM, configuration: AppleGatewayConfiguration, logger: Logger) {
        self.hsm = hsm
        self.configuration = configuration
        self.logger = logger
    }

    /// The client for `credential`, made on first use.
    func entry(for credential: IdentityCredential) throws(AppleGatewayError) -> Entry {
        let fingerprint = Hex.encode(SHA256.hash(data: credential.certificate.der))
        let certificate: NIOSSLCertificate
        do {
            certificate = try NIOSSLCertificate(bytes: credential.certificate.der, format: .der)
        } catch {
            throw AppleGatewayError(
                .identityUnavailable, "the identity certificate of key \(credential.keyID) cannot be used for TLS: \(error)")
        }
        let (entry, retired) = try state.withLock { state throws(AppleGatewayError) -> (Entry, [HTTPClient]) in
            guard !state.closed else { throw AppleGatewayError(.upstreamUnavailable, "the Apple gateway client is shut down") }
            if let existing = state.byCertificate[fingerprint] { return (existing, []) }
            var retired: [HTTPClient] = []
            // Only a newer certificate replaces the merchant's client, so a request still holding the
            // older credential during a rotation does not flip the two back and forth: it gets a
            // client of its own that is retired after its request.
            var isCurrent = true
            if let previous = state.byMerchant[credential.merchantID], let current = state.byCertificate[previous] {
                if current.notValidBefore <= credential.certificate.notValidBefore {
                    state.byCertificate.removeValue(forKey: previous)
                    retired.append(current.client)
                } else {
                    isCurrent = false
                }
            }
            let entry = makeEntry(credential, certificate: certificate)
            if isCurrent {
                state.byMerchant[credential.merchantID] = fingerprint
                state.byCertificate[fingerprint] = entry
            } else {
                retired.append(entry.client)
            }
            for client in retired { state.retiring[ObjectIdentifier(client)] = client }
            return (entry, retired)
        }
        for client in retired { retire(client) }
        return entry
    }

    private func makeEntry(_ credential: IdentityCredential, certificate: NIOSSLCertificate) -> Entry {
        let signingKey = HSMTLSSigningKey(hsm: hsm, keyID: credential.keyID, logger: logger)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        // TLS 1.3 client authentication with an RSA key is RSA-PSS or nothing.
        tls.maximumTLSVersion = signingKey.supportsTLS13 ? .tlsv13 : .tlsv12
        // Apple's list for TLS 1.2 (docs/apple-pay.md, "The identity key"); TLS 1.3's suites are all acceptable.
        tls.cipherSuites =
            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"
        tls.certificateChain = [.certificate(certificate)]
        tls.privateKey = .privateKey(NIOSSLPrivateKey(customPrivateKey: signingKey))
        tls.renegotiationSupport = .none
        if !configuration.extraTrustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(configuration.extraTrustRoots)] }
        var http = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(configuration.connectTimeout), read: TimeAmount(configuration.requestTimeout))
        )
        // Compressed bodies would slip past the byte cap.
        http.decompression = .disabled
        // AsyncHTTPClient's own spans record the full URL (merchant-token ids are in the path) and
        // add a second `traceparent`; AppleGatewayClient's span names the operation only.
        http.tracing.tracer = nil
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: http, backgroundActivityLogger: logger)
        logger.debug(
            "Apple gateway client made for an identity certificate",
            metadata: [
                "merchant-id": "\(credential.merchantID)", "key-id": "\(credential.keyID)",
                "tls": "\(signingKey.supportsTLS13 ? "1.2-1.3" : "1.2")",
            ])
        return Entry(client: client, signingKey: signingKey, notValidBefore: credential.certificate.notValidBefore)
    }

    /// Shuts `client` down after the longest a request on it may still take.
    private func retire(_ client: HTTPClient) {
        let delay = configuration.requestTimeout + .seconds(5)
        Task { [self] in
            try? await Task.sleep(for: delay)
            let stillRetiring = state.withLock { $0.retiring.removeValue(forKey: ObjectIdentifier(client)) != nil }
            if stillRetiring { try? await client.shutdown() }
        }
    }

    /// Shuts every client down; later requests fail.
    func shutdown() async {
        let clients = state.withLock { state -> [HTTPClient] in
            state.closed = true
            defer {
                state.byCertificate = [:]
                state.byMerchant = [:]
                state.retiring = [:]
            }
            return state.byCertificate.values.map(\.client) + Array(state.retiring.values)
        }
        for client in clients { try? await client.shutdown() }
    }
}
