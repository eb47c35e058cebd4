import Foundation
import PaywardenPrimitives

/// The processor relay's upstreams (docs/processors.md, "Upstreams"): one per message format, each a base
/// URL with optional extra trust roots; the cnpAPI and MercuryPay upstreams also take the format's
/// own credentials (a user and a password file). Plain HTTP is accepted only to a loopback host; a URL
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
        /// The PEM file of the client certificate (with its chain), for an upstream that requires
        /// mutual TLS; with an HSM key it may be left out for the key's stored certificate.
        public var clientCertificate: String?
        /// The PEM file of the client certificate's key, when the key is not in the HSM.
        public var clientKey: String? {
            guard case .pemFile(let path)? = clientKeySources.first else { return nil }
            return path
        }
        /// The keys in the HSM (their ids, lowercase hex) that may sign the handshake, in order of
        /// preference: two during a changeover, and the first the upstream accepts is presented.
        public var clientKeyIDs: [String] {
            clientKeySources.compactMap { source in
                guard case .hsm(let keyID) = source else { return nil }
                return keyID
            }
        }
        /// One PEM file, or one or more HSM keys.
        public var clientKeySources: [UpstreamClientKeySource]
    }

    public var cnp: Upstream?
    /// The cnpAPI merchantIds each organisation may send upstream.
    public var cnpMerchantIDs: [String: Set<String>]
    public var mercuryPay: Upstream?
    public var radial: Upstream?
    /// The organisations that may use the MercuryPay upstream (one merchant's credentials for all).
    public var mercuryPayOrganizations: Set<String>
    /// The Radial stores each organisation may name.
    public var radialStoreIDs: [String: Set<String>]
    /// The MercuryPay upstream's JSON fields for the cryptogram and the ECI, when it takes them.
    public var mercuryPayCryptogramField: String?
    public var mercuryPayECIField: String?
    /// The file holding the Radial upstream's API key (sent as its `apiKey` header).
    public var radialAPIKeyFile: String?
    /// How long one upstream call may take, the TLS handshake included.
    public var timeout: Duration

    init(_ reader: inout SettingsReader) throws(ConfigurationError) {
        typealias C = SettingCatalog
        cnp = try Self.upstream(
            &reader, url: C.relayCnpUpstream, ca: C.relayCnpUpstreamCA,
            client: (C.relayCnpUpstreamClientCertificate, C.relayCnpUpstreamClientKey))
        try Self.credentials(
            &reader, for: &cnp, url: C.relayCnpUpstream, user: C.relayCnpUpstreamUser, file: C.relayCnpUpstreamPasswordFile)
        cnpMerchantIDs = try Self.bindings(&reader, C.relayCnpMerchantIDs, url: C.relayCnpUpstream, upstream: cnp, naming: "merchantId")
        mercuryPay = try Self.upstream(
            &reader, url: C.relayMercuryPayUpstream, ca: C.relayMercuryPayUpstreamCA,
            client: (C.relayMercuryPayUpstreamClientCertificate, C.relayMercuryPayUpstreamClientKey))
        try Self.credentials(
            &reader, for: &mercuryPay, url: C.relayMercuryPayUpstream, user: C.relayMercuryPayUpstreamUser,
            file: C.relayMercuryPayUpstreamPasswordFile)
        mercuryPayOrganizations = try Self.organizations(
            &reader, C.relayMercuryPayOrganizations, url: C.relayMercuryPayUpstream, upstream: mercuryPay)
        mercuryPayCryptogramField = try Self.fieldName(&reader, C.relayMercuryPayCryptogramField, upstream: mercuryPay)
        mercuryPayECIField = try Self.fieldName(&reader, C.relayMercuryPayECIField, upstream: mercuryPay)
        if let field = mercuryPayECIField, field == mercuryPayCryptogramField {
            throw ConfigurationError(
                "\(C.relayMercuryPayCryptogramField.environmentName) and \(C.relayMercuryPayECIField.environmentName) name the same "
                    + "field (\(field)): give each its own")
        }
        radial = try Self.upstream(
            &reader, url: C.relayRadialUpstream, ca: C.relayRadialUpstreamCA,
            client: (C.relayRadialUpstreamClientCertificate, C.relayRadialUpstreamClientKey))
        radialStoreIDs = try Self.bindings(&reader, C.relayRadialStoreIDs, url: C.relayRadialUpstream, upstream: radial, naming: "store")
        radialAPIKeyFile = try reader.file(C.relayRadialUpstreamAPIKeyFile)
        if radialAPIKeyFile != nil, radial == nil {
            throw ConfigurationError(
                "\(C.relayRadialUpstreamAPIKeyFile.environmentName) is set without \(C.relayRadialUpstream.environmentName): there is no "
                    + "upstream to send the key to")
        }
        timeout = .seconds(try reader.integer(defaulted: C.relayUpstreamTimeoutSeconds))
    }

    /// The format's own upstream credentials: a user and a password file, both or neither, and
    /// only with an upstream to send them to.
    private static func credentials(
        _ reader: inout SettingsReader, for upstream: inout Upstream?, url: Setting, user userSetting: Setting, file: Setting
    ) throws(ConfigurationError) {
        let user = try reader.string(userSetting)
        let passwordFile = try reader.file(file)
        if (user == nil) != (passwordFile == nil) {
            throw ConfigurationError(
                "\(userSetting.environmentName) and \(file.environmentName) go together: set both for the upstream's own "
                    + "credentials, or neither")
        }
        if user != nil, upstream == nil {
            throw ConfigurationError(
                "\(userSetting.environmentName) is set without \(url.environmentName): there is no upstream to send the credentials to")
        }
        upstream?.user = user
        upstream?.passwordFile = passwordFile
    }

    /// `ORGANIZATION=VALUE` entries binding organisations to the upstream's merchantIds or stores.
    /// With an upstream they are required: it acts on Paywarden's credentials for whatever merchant
    /// or store a request names, so without them any organisation could charge to any merchant.
    private static func bindings(
        _ reader: inout SettingsReader, _ setting: Setting, url: Setting, upstream: Upstream?, naming what: String
    ) throws(ConfigurationError) -> [String: Set<String>] {
        var map: [String: Set<String>] = [:]
        for entry in try reader.list(setting) {
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, isName(parts[0], maximum: 64), isName(parts[1], maximum: 50) else {
                throw ConfigurationError(setting, value: entry, expected: "ORGANIZATION=\(what.uppercased()) (letters, digits, . _ -)")
            }
            map[parts[0], default: []].insert(parts[1])
        }
        try requireWithUpstream(map.isEmpty, setting, url: url, upstream: upstream, why: "for whatever \(what) a request names")
        return map
    }

    /// The organisations that may use an upstream whose requests name no merchant (MercuryPay: one
    /// merchant's credentials for all).
    private static func organizations(
        _ reader: inout SettingsReader, _ setting: Setting, url: Setting, upstream: Upstream?
    ) throws(ConfigurationError) -> Set<String> {
        let names = try reader.list(setting)
        for name in names where !isName(name, maximum: 64) {
            throw ConfigurationError(setting, value: name, expected: "organisation names (letters, digits, . _ -)")
        }
        try requireWithUpstream(names.isEmpty, setting, url: url, upstream: upstream, why: "for every organisation")
        return Set(names)
    }

    private static func requireWithUpstream(
        _ isEmpty: Bool, _ setting: Setting, url: Setting, upstream: Upstream?, why: String
    ) throws(ConfigurationError) {
        if upstream != nil, isEmpty {
            throw ConfigurationError(
                "\(url.environmentName) is set without \(setting.environmentName): the upstream acts on Paywarden's credentials \(why), "
                    + "so say which organisations may use it")
        }
        if upstream == nil, !isEmpty {
            throw ConfigurationError("\(setting.environmentName) is set without \(url.environmentName): there is no upstream to bind")
        }
    }

    private static func isName(_ text: String, maximum: Int) -> Bool {
        (1...maximum).contains(text.utf8.count)
            && text.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
            }
    }

    /// A JSON field name of the upstream's (letters, digits, `_`), one Paywarden does not already
    /// fill, and only with an upstream to send it to.
    private static func fieldName(_ reader: inout SettingsReader, _ setting: Setting, upstream: Upstream?) throws(ConfigurationError)
        -> String?
    {
        guard let name = try reader.string(setting) else { return nil }
        let reserved: Set<String> = ["AcctNo", "ExpDate", "RecordNo", "TokenType", "AccountSource"]
        guard (1...64).contains(name.utf8.count),
            name.unicodeScalars.allSatisfy({
                $0.isASCII
                    && ($0 == "_" || $0.properties.isAlphabetic
                        || ("0"..."9").contains($0))
            }), !reserved.contains(name)
        else {
            throw ConfigurationError(
                setting, value: name, expected: "a JSON field name (letters, digits, _) other than \(reserved.sorted())")
        }
        guard upstream != nil else {
            throw ConfigurationError("\(setting.environmentName) is set without \(SettingCatalog.relayMercuryPayUpstream.environmentName)")
        }
        return name
    }

    private static func upstream(
        _ reader: inout SettingsReader, url setting: Setting, ca: Setting, client: (certificate: Setting, key: Setting)
    ) throws(ConfigurationError) -> Upstream? {
        let url = try reader.string(setting)
        let roots = try reader.list(ca)
        for path in roots where !FileManager.default.isReadableFile(atPath: path) {
            throw ConfigurationError(ca, value: path, expected: "readable PEM files")
        }
        let certificate = try reader.file(client.certificate)
        let keys = try clientKeys(&reader, client.key)
        let key = keys.first
        // A key in the HSM brings its stored certificate; a PEM key needs its certificate named.
        switch (certificate, key) {
        case (.some, nil):
            throw ConfigurationError(
                "\(client.certificate.environmentName) is set without \(client.key.environmentName): name the certificate's key (an HSM "
                    + "key id, a pkcs11: URI or a PEM file), or unset both")
        case (nil, .pemFile?):
            throw ConfigurationError(
                "\(client.key.environmentName) is a PEM file without \(client.certificate.environmentName): set both for an upstream that "
                    + "requires a client certificate, or neither")
        default: break
        }
        guard let url else {
            if !roots.isEmpty || certificate != nil || key != nil {
                let set = !roots.isEmpty ? ca : key != nil ? client.key : client.certificate
                throw ConfigurationError("\(set.environmentName) is set without \(setting.environmentName): there is no upstream for it")
            }
            return nil
        }
        try checkUpstreamURL(url, setting)
        return Upstream(url: url, trustRoots: roots, user: nil, passwordFile: nil, clientCertificate: certificate, clientKeySources: keys)
    }

    /// The client key setting's entries: one PEM file, or one or two HSM keys in order of
    /// preference (a changeover names two: the next key, once the processor has its certificate,
    /// and the current). Comma-separated: a PEM path or a pkcs11: URI with a comma cannot be named.
    private static func clientKeys(_ reader: inout SettingsReader, _ setting: Setting) throws(ConfigurationError)
        -> [UpstreamClientKeySource]
    {
        var keys: [UpstreamClientKeySource] = []
        for text in try reader.list(setting) {
            let key = try UpstreamClientKeySource.parse(text, setting: setting)
            if case .pemFile(let path) = key, !FileManager.default.isReadableFile(atPath: path) {
                throw ConfigurationError(
                    setting, value: path, expected: "a readable file (a PEM key), a key id in hex or a pkcs11: URI with an id")
            }
            guard !keys.contains(key) else { throw ConfigurationError(setting, value: text, expected: "each key once") }
            keys.append(key)
        }
        if keys.count > 2 {
            throw ConfigurationError(
                "\(setting.environmentName) names \(keys.count) keys: a changeover is between two (the next key, then the current "
                    + "one, or the other way round); name the keys no longer in use no more")
        }
        if keys.count > 1, keys.contains(where: { if case .pemFile = $0 { true } else { false } }) {
            throw ConfigurationError(
                "\(setting.environmentName) names a PEM file among several keys: a changeover is between keys in the HSM (each "
                    + "presents the certificate imported for it); move the PEM key in with `paywarden keys import --purpose upstream`, "
                    + "or name it alone")
        }
        return keys
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
        LoopbackAddress.numeric(host) != nil
    }
}
