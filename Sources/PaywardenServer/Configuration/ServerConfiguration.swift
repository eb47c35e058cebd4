import ApplePay
import Configuration
import Foundation
import PKCS11

/// Everything `paywarden serve` needs, from the environment and an optional JSON file
/// (`--config` / `PAYWARDEN_CONFIG`; the environment overrides the file). Every setting has a
/// default; the environment names are part of the operator contract:
///
/// | environment | file key | default |
/// |---|---|---|
/// | `PAYWARDEN_LISTEN` | `listen` | `127.0.0.1:8080` |
/// | `PAYWARDEN_API_KEYS` | `api_keys` | none (every request is refused) |
/// | `PAYWARDEN_SIGNING_TIME_WINDOW` | `signing_time_window` | `300` |
/// | `PAYWARDEN_TRUST_ROOTS` | `trust_roots` | embedded Apple Root CA - G3 |
/// | `PAYWARDEN_TLS_CERTIFICATE`, `PAYWARDEN_TLS_PRIVATE_KEY` | `tls_certificate`, `tls_private_key` | plain HTTP |
/// | `PAYWARDEN_TLS_CLIENT_CA` | `tls_client_ca` | no client certificates |
/// | `PAYWARDEN_TLS_REQUIRE_CLIENT_CERTIFICATE` | `tls_require_client_certificate` | `false` |
/// | `PAYWARDEN_MAX_BODY_BYTES` | `max_body_bytes` | `65536` |
/// | `PAYWARDEN_MAX_IN_FLIGHT` | `max_in_flight` | 64 per HSM worker |
/// | `PAYWARDEN_HSM_RECYCLE_EVERY` | `hsm_recycle_every` | `10000` decryptions (0: never) |
/// | `PAYWARDEN_KEY_REFRESH_SECONDS` | `key_refresh_seconds` | `10` |
///
/// and the HSM settings of ``HSMConfiguration`` (`PAYWARDEN_PKCS11_MODULE`, …), and
/// `PAYWARDEN_EVENT_LOOP_THREADS` (environment only, see ``ServerThreads``).
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var apiKeys = APIKeyRegistry(keys: [])
    public var signingTimeWindow: TimeInterval = 300
    public var trustAnchors = TrustAnchors.apple
    public var tls: TLSSettings?
    public var maxBodyBytes = 64 * 1024
    public var maxInFlight: Int?
    public var recycleEvery = 10_000
    public var keyRefreshInterval: Duration = .seconds(10)
    public var hsm = HSMConfiguration()

    public init() {}

    public struct TLSSettings: Sendable {
        public var certificatePath: String
        public var privateKeyPath: String
        public var clientCAPath: String?
        public var requireClientCertificate: Bool

        public init(certificatePath: String, privateKeyPath: String, clientCAPath: String? = nil, requireClientCertificate: Bool = false) {
            self.certificatePath = certificatePath
            self.privateKeyPath = privateKeyPath
            self.clientCAPath = clientCAPath
            self.requireClientCertificate = requireClientCertificate
        }
    }

    /// Reads the configuration: the environment first, then the JSON file when one is named.
    public static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment, file: String? = nil
    ) async throws -> ServerConfiguration {
        var providers: [any ConfigProvider] = [EnvironmentVariablesProvider(
            environmentVariables: environment, secretsSpecifier: .specific(["PAYWARDEN_PIN"])
        )]
        if let path = file ?? environment["PAYWARDEN_CONFIG"] {
            guard FileManager.default.fileExists(atPath: path) else { throw ServerConfigurationError("configuration file \(path) does not exist") }
            providers.append(try await FileProvider<JSONSnapshot>(filePath: .init(path)))
        }
        let config = ConfigReader(providers: providers).scoped(to: "paywarden")
        var configuration = ServerConfiguration()

        let listen = config.string(forKey: "listen", default: "127.0.0.1:8080")
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port) else {
            throw ServerConfigurationError("PAYWARDEN_LISTEN \"\(listen)\" is not host:port")
        }
        configuration.host = String(listen[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        configuration.port = port

        if let entries = config.string(forKey: "api_keys", isSecret: true) {
            configuration.apiKeys = APIKeyRegistry(keys: try entries.split(separator: ",").map {
                try APIKey(entry: $0.trimmingCharacters(in: .whitespaces))
            })
        }
        configuration.signingTimeWindow = TimeInterval(config.int(forKey: "signing_time_window", default: 300))
        let allowedWindows = TokenSignatureVerifier.allowedSigningTimeWindows
        guard allowedWindows.contains(configuration.signingTimeWindow) else {
            throw ServerConfigurationError("PAYWARDEN_SIGNING_TIME_WINDOW must be a number of seconds from \(Int(allowedWindows.lowerBound)) to \(Int(allowedWindows.upperBound))")
        }
        if let roots = config.string(forKey: "trust_roots") {
            configuration.trustAnchors = try TrustAnchors.load(paths: roots.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
        }
        if let certificate = config.string(forKey: "tls_certificate") {
            guard let key = config.string(forKey: "tls_private_key") else {
                throw ServerConfigurationError("PAYWARDEN_TLS_CERTIFICATE needs PAYWARDEN_TLS_PRIVATE_KEY")
            }
            configuration.tls = TLSSettings(
                certificatePath: certificate, privateKeyPath: key, clientCAPath: config.string(forKey: "tls_client_ca"),
                requireClientCertificate: config.bool(forKey: "tls_require_client_certificate", default: false)
            )
        }
        configuration.maxBodyBytes = config.int(forKey: "max_body_bytes", default: 64 * 1024)
        configuration.maxInFlight = config.int(forKey: "max_in_flight")
        configuration.recycleEvery = config.int(forKey: "hsm_recycle_every", default: 10_000)
        configuration.keyRefreshInterval = .seconds(config.int(forKey: "key_refresh_seconds", default: 10))
        configuration.hsm = try HSMConfiguration.fromEnvironment(environment)
        return configuration
    }
}
