import ApplePay
import KeyCustody
import PaywardenConfiguration

extension CertificateIssuers {
    /// Apple's pinned WWDR CAs, or the files `PAYWARDEN_CERTIFICATE_ISSUERS` names.
    public static func configured(_ paths: [String]) throws(ConfigurationError) -> CertificateIssuers {
        guard !paths.isEmpty else { return .apple }
        let name = SettingCatalog.certificateIssuers.environmentName
        do {
            return try CertificateIssuers.load(paths: paths, source: "\(name) (\(paths.joined(separator: ", ")))")
        } catch {
            throw ConfigurationError("\(name): \(error.message)")
        }
    }
}

extension TrustAnchors {
    /// The embedded Apple root, or the files `PAYWARDEN_TRUST_ROOTS` names.
    public static func configured(_ paths: [String]) throws(ConfigurationError) -> TrustAnchors {
        guard !paths.isEmpty else { return .apple }
        do {
            return try TrustAnchors.load(paths: paths)
        } catch {
            throw ConfigurationError("\(SettingCatalog.trustRoots.environmentName): \(error)")
        }
    }
}
