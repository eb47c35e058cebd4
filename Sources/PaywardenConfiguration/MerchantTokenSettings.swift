import Foundation

/// Apple's gateway and the merchant-token notifications: where Paywarden may connect for Apple,
/// whom it believes a notification from, and how much waiting work it keeps. The server turns the
/// host patterns and CIDRs into checked values (and refuses to start on a bad one).
public struct MerchantTokenSettings: Sendable {
    /// Base URL of Apple's gateway (events, unlink, update).
    public var gateway: String
    /// PEM files of extra trust roots for the gateway.
    public var gatewayTrustRoots: [String]
    public var gatewayTimeout: Duration
    /// `HOST` or `HOST:PORT` patterns; the gateway and every `validationURL` must match one.
    public var validationHosts: [String]
    /// CIDRs a notification may come from.
    public var allowedSources: [String]
    public var pendingLimit: Int
    public var pollInterval: Duration
    /// The platform integrator id whose identity key calls the Web Merchant Registration API.
    public var platformIntegratorID: String?
    /// `PAYWARDEN_PUBLIC_URL`: where devices fetch usage-information packages; nil: the feature is off.
    public var publicURL: String?
    /// Failed usage-information fetches per second per client address (bursts of ten times that).
    public var usageInformationFailuresPerAddress: Int

    init(_ reader: inout SettingsReader) throws(ConfigurationError) {
        typealias C = SettingCatalog
        gateway = try reader.string(defaulted: C.applePayGateway)
        gatewayTrustRoots = try reader.list(C.applePayGatewayCA)
        for path in gatewayTrustRoots where !FileManager.default.isReadableFile(atPath: path) {
            throw ConfigurationError(C.applePayGatewayCA, value: path, expected: "readable PEM files")
        }
        gatewayTimeout = .seconds(try reader.integer(defaulted: C.applePayGatewayTimeoutSeconds))
        validationHosts = try reader.list(C.merchantValidationHosts)
        if validationHosts.isEmpty {
            throw ConfigurationError(
                "\(C.merchantValidationHosts.environmentName) is empty: Paywarden could reach no Apple host; unset it for Apple's list")
        }
        allowedSources = try reader.list(C.merchantTokenAllowedSources)
        if allowedSources.isEmpty {
            throw ConfigurationError(
                "\(C.merchantTokenAllowedSources.environmentName) is empty: no notification could be accepted; unset it for Apple's "
                    + "ranges")
        }
        pendingLimit = try reader.integer(defaulted: C.merchantTokenPendingLimit)
        pollInterval = .seconds(try reader.integer(defaulted: C.merchantTokenPollSeconds))
        platformIntegratorID = try reader.string(C.platformIntegratorID)
        if let id = platformIntegratorID,
            !((1...128).contains(id.utf8.count)
                && id.unicodeScalars.allSatisfy({
                    $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
                }))
        {
            throw ConfigurationError(C.platformIntegratorID, value: id, expected: "an identifier of letters, digits, . _ - (at most 128)")
        }
        publicURL = try reader.string(C.publicURL)
        if let publicURL { try Self.checkPublicURL(publicURL) }
        usageInformationFailuresPerAddress = try reader.integer(defaulted: C.usageInformationFailuresPerAddress)
    }
}

extension MerchantTokenSettings {
    /// `https://HOST[:PORT][/PATH]`, or `http://` to a loopback host (tests); no credentials, query
    /// or fragment, no trailing slash (devices append `/v1/merchantToken/…`). Paywarden serves that
    /// route at its root: a `PATH` is a reverse proxy's, stripped before the request arrives.
    static func checkPublicURL(_ text: String) throws(ConfigurationError) {
        let setting = SettingCatalog.publicURL
        let expected = "an https URL (http only to 127.0.0.1, ::1 or localhost), without credentials, query, fragment or trailing slash"
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty, components.user == nil, components.password == nil,
            components.query == nil, components.fragment == nil, !text.hasSuffix("/")
        else { throw ConfigurationError(setting, value: text, expected: expected) }
        switch scheme {
        case "https": return
        case "http" where RelaySettings.isLoopback(host): return
        case "http":
            throw ConfigurationError(
                "\(setting.environmentName) is plain http to \(host): devices fetch authentication tokens' packages there, so only "
                    + "https is accepted (http only to a loopback host)")
        default: throw ConfigurationError(setting, value: text, expected: expected)
        }
    }
}
