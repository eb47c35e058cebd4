import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import PaywardenServices
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a domain's challenge file over HTTPS from the domain itself. The domain comes from a
/// tenant, so the fetch guards against server-side request forgery: the name is resolved once and
/// every address it has must be a public unicast one (no loopback, private, link-local, shared,
/// multicast, documentation or otherwise reserved block, IPv4 or IPv6); the connection goes to that
/// address (no second look-up a rebinding name server could answer differently), with the domain
/// as the TLS server name and its certificate checked against the system's roots; no redirect is
/// followed, at most 4 KiB is read, and the whole fetch is bounded in time.
public struct DomainChallengeFetcher: DomainControlCheck {
    public struct Configuration: Sendable {
        public var port: Int
        /// The whole fetch: look-up, connection, TLS, request and body.
        public var timeout: Duration
        /// Beside the system's (tests).
        public var extraTrustRoots: [NIOSSLCertificate]
        /// A name's addresses, as text: the system's resolver unless a test points every name at its stand-in.
        public var resolve: @Sendable (String) async throws -> [String]
        /// Loopback and private addresses are refused unless true: tests, whose stand-in listens on loopback.
        public var allowsNonPublicAddresses: Bool

        public init(
            port: Int = 443, timeout: Duration = .seconds(10), extraTrustRoots: [NIOSSLCertificate] = [],
            resolve: @escaping @Sendable (String) async throws -> [String] = DomainChallengeFetcher.systemAddresses,
            allowsNonPublicAddresses: Bool = false
        ) {
            self.port = port
            self.timeout = timeout
            self.extraTrustRoots = extraTrustRoots
            self.resolve = resolve
            self.allowsNonPublicAddresses = allowsNonPublicAddresses
        }
    }

    /// A challenge file holds a line per organisation; anything larger is not one.
    public static let maximumBytes = 4096

    let configuration: Configuration

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    public func servedChallenges(domain: String) async throws(DomainCheckFailure) -> [String] {
        let addresses: [String]
        do {
            addresses = try await Self.within(configuration.timeout) { [configuration] in try await configuration.resolve(domain) }
        } catch {
            throw DomainCheckFailure("\(domain) could not be resolved within \(configuration.timeout) (\(error))")
        }
        guard !addresses.isEmpty else { throw DomainCheckFailure("\(domain) has no address") }
        if !configuration.allowsNonPublicAddresses, let inner = addresses.first(where: { !Self.isPublic($0) }) {
            throw DomainCheckFailure("\(domain) resolves to \(inner), not a public address: nothing is fetched from it")
        }
        // IPv4 first where the name has both: the address the connection goes to, and no other.
        let address = addresses.first { !$0.contains(":") } ?? addresses[0]
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if !configuration.extraTrustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(configuration.extraTrustRoots)] }
        var http = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(configuration.timeout), read: TimeAmount(configuration.timeout)))
        http.decompression = .disabled
        http.dnsOverride = [domain: address]
        // One attempt: a domain without a certificate for its name (or not listening) fails now,
        // saying why, rather than being retried until the deadline.
        http.connectionPool.retryConnectionEstablishment = false
        // Its own spans would record the URL; this fetch has nothing to join to.
        http.tracing.tracer = nil
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: http)
        let result = await fetch(domain, client)
        try? await client.shutdown()
        return try result.get()
    }

    private func fetch(_ domain: String, _ client: HTTPClient) async -> Result<[String], DomainCheckFailure> {
        let port = configuration.port == 443 ? "" : ":\(configuration.port)"
        var request = HTTPClientRequest(url: "https://\(domain)\(port)\(DomainChallenge.path)")
        request.headers.add(name: "Accept", value: "text/plain")
        do {
            let response = try await client.execute(request, timeout: TimeAmount(configuration.timeout))
            guard response.status == .ok else {
                return .failure(DomainCheckFailure("https://\(domain)\(DomainChallenge.path) answered \(response.status.code)"))
            }
            let body = try await response.body.collect(upTo: Self.maximumBytes)
            let text = String(decoding: body.readableBytesView, as: UTF8.self)
            return .success(
                text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        } catch {
            return .failure(
                DomainCheckFailure(
                    "https://\(domain)\(DomainChallenge.path) could not be read over HTTPS with a certificate for \(domain), within "
                        + "\(Self.maximumBytes) bytes and \(configuration.timeout) (\(error))"))
        }
    }

    /// `body`'s value, or a failure once `limit` passed. Unstructured on purpose: a look-up the
    /// system resolver keeps waiting on cannot be cancelled, so it goes on alone, its answer dropped.
    private static func within<Value: Sendable>(
        _ limit: Duration, _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let once = Once<Value>()
        return try await withCheckedThrowingContinuation { continuation in
            once.hold(continuation)
            let work = Task {
                do {
                    once.resume(.success(try await body()))
                } catch {
                    once.resume(.failure(error))
                }
            }
            Task {
                try? await Task.sleep(for: limit)
                work.cancel()
                once.resume(.failure(DomainCheckFailure("no answer")))
            }
        }
    }

    /// A continuation resumed by whichever comes first.
    private final class Once<Value: Sendable>: Sendable {
        private let continuation = Mutex<CheckedContinuation<Value, any Error>?>(nil)

        func hold(_ continuation: CheckedContinuation<Value, any Error>) {
            self.continuation.withLock { $0 = continuation }
        }

        func resume(_ result: Result<Value, any Error>) {
            let waiting = continuation.withLock { held in
                defer { held = nil }
                return held
            }
            waiting?.resume(with: result)
        }
    }

    /// Blocks no fetch may reach (IANA's special-purpose registries, IPv4 and IPv6), and the
    /// IPv6 prefixes that carry an IPv4 address (NAT64, 6to4, Teredo).
    static let nonPublicBlocks: [IPAddressBlock] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
        "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4",
        "240.0.0.0/4", "::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16",
        "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    ].compactMap(IPAddressBlock.init)

    /// Whether `address` (text) is one a fetch may go to.
    static func isPublic(_ address: String) -> Bool {
        guard let bytes = IPAddressBlock.addressBytes(address) else { return false }
        return !nonPublicBlocks.contains { $0.contains(bytes) }
    }

    /// The system resolver's addresses for `name`, looked up off Swift's cooperative threads.
    public static let systemAddresses: @Sendable (String) async throws -> [String] = { name in
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try addresses(of: name) }) }
        }
    }

    private static func addresses(of name: String) throws -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, nil, &hints, &list)
        guard status == 0 else { throw DomainCheckFailure(String(cString: gai_strerror(status))) }
        defer { freeaddrinfo(list) }
        var found: [String] = []
        var cursor = list
        while let entry = cursor {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if let address = entry.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var raw = v4.pointee.sin_addr
                        _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var raw = v6.pointee.sin6_addr
                        _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                    }
                default: break
                }
            }
            let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !address.isEmpty, !found.contains(address) { found.append(address) }
            cursor = entry.pointee.ai_next
        }
        return found
    }
}
