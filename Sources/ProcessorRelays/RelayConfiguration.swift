import Foundation
import NIOSSL
import PKCS11
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenServices
import ProcessorMessages

/// The message formats Paywarden relays, each with an upstream of its own. The raw value is the
/// `format` label of the upstream metrics.
public enum UpstreamFormat: String, Sendable, Hashable, CaseIterable {
    case cnpAPI = "cnpapi"
    case mercuryPay = "mercurypay"
    case radial
}

/// One upstream, checked: where it is, whom to trust, how long to wait, and the format's own
/// credentials (the password read from its file at start-up).
public struct UpstreamConfiguration: Sendable {
    public var format: UpstreamFormat
    public var baseURL: URL
    public var extraTrustRoots: [NIOSSLCertificate]
    public var credentials: Credentials?
    /// The client certificate (leaf first) and key presented to an upstream that requires mutual TLS.
    public var clientCertificateChain: [NIOSSLCertificate] = []
    /// The key from a PEM file: weaker than one in the HSM, so the start warns about it.
    public var clientKey: NIOSSLPrivateKey?
    /// The keys in the HSM (purpose upstream) that may sign the handshake instead, in order of
    /// preference: the first the upstream accepts is presented (``UpstreamClient``). Each presents
    /// the configured chain when its leaf holds the key's public key, else the certificate stored
    /// with the key.
    public var clientKeysInHSM: [KeyIdentifier] = []
    /// How often, while a less preferred key is presented, the upstream is asked whether it
    /// accepts a more preferred one.
    public var clientKeyCheckInterval: Duration = .seconds(60)
    public var timeout: Duration
    /// The most of a reply that is read; a longer one is an upstream failure.
    var maximumResponseBytes = 1 << 20

    /// The format's own user and password for the upstream; the password never shows.
    public struct Credentials: Sendable {
        public var user: String
        public var password: Sensitive<String>

        public init(user: String, password: Sensitive<String>) {
            self.user = user
            self.password = password
        }

        public init(user: String, password: String) {
            self.init(user: user, password: Sensitive(password))
        }
    }

    public init(
        format: UpstreamFormat, baseURL: URL, extraTrustRoots: [NIOSSLCertificate] = [], credentials: Credentials? = nil,
        timeout: Duration = .seconds(30)
    ) {
        self.format = format
        self.baseURL = baseURL
        self.extraTrustRoots = extraTrustRoots
        self.credentials = credentials
        self.timeout = timeout
    }

    /// The base URL with `path` appended to its own path.
    public func url(_ path: String) -> String {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }
}

/// The relay's upstreams, one per format; a format without one refuses relayed requests.
public struct RelayConfiguration: Sendable {
    public var cnp: UpstreamConfiguration?
    /// The cnpAPI merchantIds each organisation may send upstream; an organisation without an
    /// entry relays nothing.
    public var cnpMerchantIDs: [OrganizationID: Set<String>]
    public var mercuryPay: UpstreamConfiguration?
    public var radial: UpstreamConfiguration?
    /// The organisations that may use the MercuryPay upstream.
    public var mercuryPayOrganizations: Set<OrganizationID>
    /// The Radial stores each organisation may name; an organisation without an entry relays nothing.
    public var radialStoreIDs: [OrganizationID: Set<String>]
    /// Where the MercuryPay upstream takes the cryptogram and ECI; by default neither is sent.
    public var mercuryPayFields: MercuryPayForwarding.Options
    /// Radial's `apiKey` header for its upstream, when configured.
    public var radialAPIKey: Sensitive<String>?

    public init(
        cnp: UpstreamConfiguration? = nil, cnpMerchantIDs: [OrganizationID: Set<String>] = [:], mercuryPay: UpstreamConfiguration? = nil,
        mercuryPayOrganizations: Set<OrganizationID> = [], radial: UpstreamConfiguration? = nil,
        radialStoreIDs: [OrganizationID: Set<String>] = [:],
        mercuryPayFields: MercuryPayForwarding.Options = .init(), radialAPIKey: Sensitive<String>? = nil
    ) {
        self.cnp = cnp
        self.cnpMerchantIDs = cnpMerchantIDs
        self.mercuryPay = mercuryPay
        self.mercuryPayOrganizations = mercuryPayOrganizations
        self.radial = radial
        self.radialStoreIDs = radialStoreIDs
        self.mercuryPayFields = mercuryPayFields
        self.radialAPIKey = radialAPIKey
    }

    public init(settings: RelaySettings) throws(ConfigurationError) {
        typealias C = SettingCatalog
        cnp = try Self.upstream(
            settings.cnp, format: .cnpAPI, timeout: settings.timeout, url: C.relayCnpUpstream, ca: C.relayCnpUpstreamCA,
            passwordFile: C.relayCnpUpstreamPasswordFile,
            client: (C.relayCnpUpstreamClientCertificate, C.relayCnpUpstreamClientKey))
        cnpMerchantIDs = Dictionary(uniqueKeysWithValues: settings.cnpMerchantIDs.map { (OrganizationID($0.key), $0.value) })
        mercuryPay = try Self.upstream(
            settings.mercuryPay, format: .mercuryPay, timeout: settings.timeout, url: C.relayMercuryPayUpstream,
            ca: C.relayMercuryPayUpstreamCA, passwordFile: C.relayMercuryPayUpstreamPasswordFile,
            client: (C.relayMercuryPayUpstreamClientCertificate, C.relayMercuryPayUpstreamClientKey))
        mercuryPayOrganizations = Set(settings.mercuryPayOrganizations.map { OrganizationID($0) })
        radialStoreIDs = Dictionary(uniqueKeysWithValues: settings.radialStoreIDs.map { (OrganizationID($0.key), $0.value) })
        mercuryPayFields = .init(cryptogramField: settings.mercuryPayCryptogramField, eciField: settings.mercuryPayECIField)
        radial = try Self.upstream(
            settings.radial, format: .radial, timeout: settings.timeout, url: C.relayRadialUpstream, ca: C.relayRadialUpstreamCA,
            passwordFile: nil, client: (C.relayRadialUpstreamClientCertificate, C.relayRadialUpstreamClientKey))
        if let path = settings.radialAPIKeyFile {
            radialAPIKey = Sensitive(try Self.readPassword(path, setting: C.relayRadialUpstreamAPIKeyFile))
        }
    }

    /// Every configured upstream.
    public var all: [UpstreamConfiguration] { [cnp, mercuryPay, radial].compactMap { $0 } }

    private static func upstream(
        _ settings: RelaySettings.Upstream?, format: UpstreamFormat, timeout: Duration, url: Setting, ca: Setting, passwordFile: Setting?,
        client: (certificate: Setting, key: Setting)
    ) throws(ConfigurationError) -> UpstreamConfiguration? {
        guard let settings else { return nil }
        guard let baseURL = URL(string: settings.url) else { throw ConfigurationError("\(url.environmentName) is not a URL") }
        var roots: [NIOSSLCertificate] = []
        for path in settings.trustRoots {
            do {
                roots += try NIOSSLCertificate.fromPEMFile(path)
            } catch {
                throw ConfigurationError("\(ca.environmentName): \(path) holds no PEM certificate")
            }
        }
        var credentials: UpstreamConfiguration.Credentials?
        if let user = settings.user, let path = settings.passwordFile, let passwordFile {
            credentials = .init(user: user, password: Sensitive(try readPassword(path, setting: passwordFile)))
        }
        var upstream = UpstreamConfiguration(
            format: format, baseURL: baseURL, extraTrustRoots: roots, credentials: credentials, timeout: timeout)
        if let certificate = settings.clientCertificate, let key = settings.clientKey {
            // Checked as the server's own: readable, a certificate, a key that belongs to it.
            let identity = try TLSFiles.identity(certificate: (certificate, client.certificate), key: (key, client.key))
            upstream.clientCertificateChain = identity.chain
            upstream.clientKey = identity.key
        }
        if !settings.clientKeyIDs.isEmpty {
            // The keys' existence, purpose and match with the certificate are checked against the
            // HSM at start-up (``RelayService/prepareClientKeys()``).
            for hex in settings.clientKeyIDs {
                guard let keyID = KeyIdentifier(hex: hex) else {
                    throw ConfigurationError(client.key, value: hex, expected: "a key id in hex or a pkcs11: URI with an id")
                }
                upstream.clientKeysInHSM.append(keyID)
            }
            if let certificate = settings.clientCertificate {
                do {
                    upstream.clientCertificateChain = try NIOSSLCertificate.fromPEMFile(certificate)
                } catch {
                    throw ConfigurationError("\(client.certificate.environmentName): \(certificate) holds no PEM certificate")
                }
                if upstream.clientCertificateChain.isEmpty {
                    throw ConfigurationError("\(client.certificate.environmentName): \(certificate) holds no PEM certificate")
                }
            }
        }
        return upstream
    }

    /// The settings that name `format`'s client certificate and key, for the messages that refuse them.
    public static func clientSettings(_ format: UpstreamFormat) -> (certificate: Setting, key: Setting) {
        typealias C = SettingCatalog
        switch format {
        case .cnpAPI: return (C.relayCnpUpstreamClientCertificate, C.relayCnpUpstreamClientKey)
        case .mercuryPay: return (C.relayMercuryPayUpstreamClientCertificate, C.relayMercuryPayUpstreamClientKey)
        case .radial: return (C.relayRadialUpstreamClientCertificate, C.relayRadialUpstreamClientKey)
        }
    }

    /// The file's text without its trailing line breaks; an empty one is refused.
    private static func readPassword(_ path: String, setting: Setting) throws(ConfigurationError) -> String {
        guard let password = try SecretFile.read(path, for: setting.environmentName) else {
            throw ConfigurationError("\(setting.environmentName): \(path) cannot be read as UTF-8 text")
        }
        guard !password.isEmpty else { throw ConfigurationError("\(setting.environmentName): \(path) holds no password") }
        return password
    }
}
