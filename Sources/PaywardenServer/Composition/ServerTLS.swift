import NIOSSL
import PaywardenConfiguration
import PaywardenServices

/// The API listener's TLS: TLS 1.2 or later with the suites Apple lists for Apple Pay servers,
/// and mutual TLS when a client CA is set. `ServerConfiguration` builds it once when the settings
/// are loaded, so a wrong file refuses the start naming its setting; the listener builds it again
/// from the same files when it starts.
enum ServerTLS {
    static func configuration(_ settings: ServerSettings.TLS) throws(ConfigurationError) -> TLSConfiguration {
        typealias C = SettingCatalog
        let identity = try TLSFiles.identity(
            certificate: (settings.certificatePath, C.tlsCertificate), key: (settings.privateKeyPath, C.tlsPrivateKey))
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.chain.map { .certificate($0) }, privateKey: .privateKey(identity.key))
        tls.minimumTLSVersion = .tlsv12
        // TLS 1.2 suites from Apple's list; TLS 1.3 negotiates AES-GCM suites of its own.
        tls.cipherSuites =
            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"
        if let clientCA = settings.clientCAPath {
            tls.trustRoots = .certificates(try TLSFiles.certificates(clientCA, C.tlsClientCA, holding: "PEM CA certificates"))
            tls.certificateVerification = settings.requireClientCertificate ? .noHostnameVerification : .optionalVerification
        }
        do {
            _ = try NIOSSLContext(configuration: tls)
        } catch {
            throw ConfigurationError(
                "\(C.tlsCertificate.environmentName), \(C.tlsPrivateKey.environmentName) and \(C.tlsClientCA.environmentName) do not "
                    + "make a TLS server configuration: \(error)")
        }
        return tls
    }
}
