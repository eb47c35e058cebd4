import Foundation
import NIOSSL

/// Where Apple's gateway is and how long to wait for it.
public struct AppleGatewayConfiguration: Sendable {
    /// Apple's production gateway: merchant-token calls go here.
    public static let appleBaseURL = URL(string: "https://apple-pay-gateway.apple.com")!

    /// The gateway merchant-token calls go to; passes `hostPolicy`.
    public var baseURL: URL
    /// The hosts any call may go to, validation URLs included.
    public var hostPolicy: AppleGatewayHostPolicy
    /// Trusted besides the system roots (a test CA, a corporate TLS inspection CA).
    public var extraTrustRoots: [NIOSSLCertificate]
    public var connectTimeout: Duration = .seconds(5)
    /// The whole request, handshake (with its HSM signature) to the last body byte.
    public var requestTimeout: Duration = .seconds(20)
    /// Apple's answers are small; a larger body is refused, never buffered.
    public var maxResponseBytes: Int = 64 * 1024

    /// - Throws: `validationURLRefused` when `baseURL` is not an https origin `hostPolicy` allows.
    public init(baseURL: URL, hostPolicy: AppleGatewayHostPolicy, extraTrustRoots: [NIOSSLCertificate] = []) throws(AppleGatewayError) {
        try hostPolicy.check(baseURL)
        let components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false)
        guard components?.percentEncodedQuery == nil, ["", "/"].contains(components?.percentEncodedPath ?? "") else {
            throw AppleGatewayError(
                .validationURLRefused,
                "the Apple gateway base URL must be an origin such as https://apple-pay-gateway.apple.com, "
                    + "without path or query")
        }
        self.baseURL = baseURL
        self.hostPolicy = hostPolicy
        self.extraTrustRoots = extraTrustRoots
    }

    /// Apple's production gateway with §3's allow-list.
    public static func apple() -> AppleGatewayConfiguration {
        // Both are constants that pass their own checks.
        try! AppleGatewayConfiguration(
            baseURL: appleBaseURL, hostPolicy: AppleGatewayHostPolicy(patterns: AppleGatewayHostPolicy.appleHosts))
    }

    /// The origin without a trailing slash, for building request URLs.
    var origin: String {
        var text = baseURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}
