/// Why a call to Apple's gateway did not produce what was asked, in terms the API and the
/// notification worker act on: the code decides the HTTP status and whether to retry.
///
/// The message is for operators: it never holds a token value, a PAN or key bytes, and Apple's
/// own `errorMessage` appears in it only truncated and without control characters.
public struct AppleGatewayError: Error, Sendable, CustomStringConvertible, Equatable {
    public enum Code: String, Sendable, CaseIterable {
        /// The validation URL failed the SSRF checks (host, scheme, port, path): HTTP 400 at the API.
        case validationURLRefused = "validation_url_refused"
        /// A field of the request is malformed (display name, initiative, identifiers).
        case invalidRequest = "invalid_request"
        /// No identity certificate usable now for the merchant is in the HSM.
        case identityUnavailable = "identity_unavailable"
        /// No answer from Apple: connection or TLS failure, timeout, 5xx, 408 or 429.
        case upstreamUnavailable = "upstream_unavailable"
        /// Apple answered 4xx, or a redirect (never followed).
        case appleRefused = "apple_request_refused"
        /// Apple does not know the event (404 on an event fetch).
        case eventNotFound = "event_not_found"
        /// Apple's body is unparseable, out of bounds or too large.
        case responseInvalid = "apple_response_invalid"
        /// The HSM could not sign the handshake or read the identity keys.
        case hsmUnavailable = "hsm_unavailable"
        /// Apple's 401 to the Web Merchant Registration API: the platform integrator may not call it
        /// (access not granted, wrong certificate or id), or the merchant is not registered.
        case platformUnauthorized = "apple_platform_unauthorized"
        /// Apple's 417 to the Web Merchant Registration API: the platform isn't registered with
        /// Apple Developer.
        case platformNotRegistered = "apple_platform_not_registered"
    }

    public let code: Code
    public let message: String
    /// Apple's HTTP status, when there was an answer.
    public let appleStatus: Int?

    public init(_ code: Code, _ message: String, appleStatus: Int? = nil) {
        self.code = code
        self.message = message
        self.appleStatus = appleStatus
    }

    /// Whether trying again later may succeed without anyone changing anything: Apple or the
    /// network down, or a certificate an admin is about to import.
    public var isRetryable: Bool {
        switch code {
        case .upstreamUnavailable, .identityUnavailable, .hsmUnavailable: true
        default: false
        }
    }

    public var description: String {
        "\(code.rawValue): \(message)"
    }
}
