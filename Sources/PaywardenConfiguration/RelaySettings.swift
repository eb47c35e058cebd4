import Foundation

/// The processor relay's upstreams (processor-apis.md §4): one per message format, each a base
/// URL with optional extra trust roots; the cnpAPI upstream also takes the format's own
/// credentials (a user and a password file). Plain HTTP is accepted only to a loopback host; a URL
/// carrying credentials, an unreadable file or half a credential pair refuses the start.
public struct RelaySettings: Sendable {
    /// One upstream as configured: URL, extra trust roots, and the format's credentials.
    public struct Upstream: Sendable {
        public var url: String
        /// PEM files of extra trust roots, beside the system's.
        public var trustRoots: [String]
        public var user: String?
        /// The file the password is read from (at start-up, by the server).
        public var passwordFile: String?
    }

    public var cnp: Upstream?
    public var mercuryPay: Upstream?
    public var radial: Upstream?
    /// How long one upstream call may take, the TLS handshake included.
    public var timeout: Duration

    init(_ reader: inout SettingsReader) throws(ConfigurationError) {
        typealias C = SettingCatalog
        cnp = try Self.upstream(&reader, url: C.relayCnpUpstream, ca: C.relayCnpUpstreamCA)
        let user = try reader.string(C.relayCnpUpstreamUser)
        let passwordFile = try reader.file(C.relayCnpUpstreamPasswordFile)
        if (user == nil) != (passwordFile == nil) {
            throw ConfigurationError(
                "\(C.relayCnpUpstreamUser.environmentName) and \(C.relayCnpUpstreamPasswordFile.environmentName) go together: set both "
                    + "for the upstream's own cnpAPI credentials, or neither")
        }
        if user != nil, cnp == nil {
            throw ConfigurationError(
                "\(C.relayCnpUpstreamUser.environmentName) is set without \(C.relayCnpUpstream.environmentName): there is no upstream "
                    + "to send the credentials to")
        }
        cnp?.user = user
        cnp?.passwordFile = passwordFile
        mercuryPay = try Self.upstream(&reader, url: C.relayMercuryPayUpstream, ca: C.relayMercuryPayUpstreamCA)
        radial = try Self.upstream(&reader, url: C.relayRadialUpstream, ca: C.relayRadialUpstreamCA)
        timeout = .seconds(try reader.integer(defaulted: C.relayUpstreamTimeoutSeconds))
    }

    private static func upstream(_ reader: inout SettingsReader, url setting: Setting, ca: Setting) throws(ConfigurationError)
        -> Upstream?
    {
        let url = try reader.string(setting)
        let roots = try reader.list(ca)
        for path in roots where !FileManager.default.isReadableFile(atPath: path) {
            throw ConfigurationError(ca, value: path, expected: "readable PEM files")
        }
        guard let url else {
            if !roots.isEmpty {
                throw ConfigurationError("\(ca.environmentName) is set without \(setting.environmentName): there is no upstream to trust")
            }
            return nil
        }
        try checkUpstreamURL(url, setting)
        return Upstream(url: url, trustRoots: roots, user: nil, passwordFile: nil)
    }

    /// `https://HOST[:PORT][/PATH]`, or `http://` to a loopback host (a stand-in on the same machine);
    /// no user info (credentials come from files), no query or fragment.
    static func checkUpstreamURL(_ text: String, _ setting: Setting) throws(ConfigurationError) {
        let expected = "an https URL (http only to 127.0.0.1, ::1 or localhost), without credentials, query or fragment"
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty, components.user == nil, components.password == nil,
            components.query == nil, components.fragment == nil
        else { throw ConfigurationError(setting, value: text, expected: expected) }
        switch scheme {
        case "https": return
        case "http" where isLoopback(host): return
        case "http":
            throw ConfigurationError(
                "\(setting.environmentName) is plain http to \(host): card data goes to the upstream, so only https is accepted "
                    + "(http only to a loopback host)")
        default: throw ConfigurationError(setting, value: text, expected: expected)
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if bare == "localhost" || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
