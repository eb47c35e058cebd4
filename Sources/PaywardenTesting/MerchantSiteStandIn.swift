import Foundation
import MerchantTokens
import NIOSSL
import Synchronization

/// A stand-in for merchants' web sites as the web-merchant domain check reaches them
/// (docs/web-merchants.md, "Who may register a domain"): HTTPS on 127.0.0.1 with a certificate for
/// every name one label under example.com, example.org and example.net (the tests' domains), which
/// answers `GET /.well-known/paywarden-domain-challenge` with the lines a test put there for the
/// request's host (404 where none), and records which hosts were asked.
public final class MerchantSiteStandIn: Sendable {
    public let serverCA: NIOSSLCertificate
    private let listener: StandInListener
    private let state = Mutex(State())

    private struct State {
        var byDomain: [String: [String]] = [:]
        var everywhere: [String]?
        var asked: [String] = []
    }

    private init(serverCA: NIOSSLCertificate, listener: StandInListener) {
        self.serverCA = serverCA
        self.listener = listener
    }

    public static func start() async throws -> MerchantSiteStandIn {
        let identity = try LoopbackServerIdentity(
            caName: "Paywarden Stand-in Merchant Sites CA", dnsNames: ["*.example.com", "*.example.org", "*.example.net"])
        let box = SiteState()
        let listener = try await StandInListener.start(sslContext: try NIOSSLContext(configuration: identity.configuration)) {
            head, _, _ in
            let host = (head.headers["Host"].first ?? "").split(separator: ":").first.map { String($0).lowercased() } ?? ""
            return (box.answer(host: host, method: "\(head.method)", path: head.uri), .zero)
        }
        let site = MerchantSiteStandIn(serverCA: try NIOSSLCertificate(bytes: identity.caDER, format: .der), listener: listener)
        box.site.withLock { $0 = site }
        return site
    }

    /// Holds the site for the listener's closure, which is made before the site.
    private final class SiteState: Sendable {
        let site = Mutex<MerchantSiteStandIn?>(nil)

        func answer(host: String, method: String, path: String) -> StandInResponse {
            site.withLock { $0 }?.answer(host: host, method: method, path: path) ?? StandInResponse(status: 503)
        }
    }

    private func answer(host: String, method: String, path: String) -> StandInResponse {
        state.withLock { state in
            state.asked.append(host)
            guard method == "GET", path == DomainChallenge.path, let lines = state.byDomain[host] ?? state.everywhere, !lines.isEmpty
            else {
                return StandInResponse(status: 404, body: Array("not found".utf8), headers: [("Content-Type", "text/plain")])
            }
            return StandInResponse(
                status: 200, body: Array(lines.map { $0 + "\n" }.joined().utf8), headers: [("Content-Type", "text/plain")])
        }
    }

    public var port: Int { listener.port }

    /// `domain`'s challenge file: these lines (none: 404 for it, whatever ``serveEverywhere(_:)`` says).
    public func serve(_ lines: [String], at domain: String) {
        state.withLock { $0.byDomain[domain.lowercased()] = lines }
    }

    /// The challenge file of every domain not given its own.
    public func serveEverywhere(_ lines: [String]?) {
        state.withLock { $0.everywhere = lines }
    }

    /// The hosts asked for their challenge file, oldest first.
    public var askedHosts: [String] { state.withLock { $0.asked } }

    /// The server's domain check, pointed here: every name resolves to 127.0.0.1, and this site's
    /// CA is trusted beside the system's roots.
    public var domainCheck: DomainChallengeFetcher.Configuration {
        DomainChallengeFetcher.Configuration(
            port: port, timeout: .seconds(10), extraTrustRoots: [serverCA], resolve: { _ in ["127.0.0.1"] },
            allowsNonPublicAddresses: true)
    }
}
