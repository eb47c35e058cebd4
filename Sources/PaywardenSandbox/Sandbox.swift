import Foundation
import PaywardenConfiguration
import PaywardenPrimitives

/// The sandbox beside a development token (its directory's `sandbox/`): the development PKI, a
/// merchant it certified, that merchant's organisation and paypage, the merchant server's API key,
/// and the loopback ports where the tour's stand-ins for Apple and a processor listen. Written by
/// `paywarden dev-hsm sandbox`, read by the development token's environment and by the tour.
public struct Sandbox: Codable, Sendable, Equatable {
    public static let merchantID = "merchant.com.example.sandbox"
    public static let organization: OrganizationID = "sandbox"
    public static let paypageID = "sandboxPaypage"
    /// The cnpAPI merchantId the organisation may send upstream.
    public static let cnpMerchantID = "01234"

    /// Where the stand-in for Apple's gateway listens (HTTPS with the PKI's server certificate).
    public var appleGatewayPort: Int
    /// Where the stand-in for the processor's cnpAPI engine listens (HTTPS, the same certificate).
    public var processorPort: Int

    public init(appleGatewayPort: Int, processorPort: Int) {
        self.appleGatewayPort = appleGatewayPort
        self.processorPort = processorPort
    }

    /// The files of a sandbox directory.
    public struct Layout: Sendable {
        public let directory: String

        public init(tokenDirectory: String) {
            directory = tokenDirectory + "/sandbox"
        }

        public var pkiDirectory: String { directory + "/pki" }
        public var descriptionFile: String { directory + "/sandbox.json" }
        /// The merchant server's API key (clear text, 0600) and its configuration entry.
        public var apiKeyFile: String { directory + "/merchant-api-key" }
        public var apiKeyEntryFile: String { directory + "/merchant-api-key.entry" }

        /// The sandbox described in this directory, or nil when there is none yet.
        public func load() throws -> Sandbox? {
            guard let data = FileManager.default.contents(atPath: descriptionFile) else { return nil }
            return try JSONDecoder().decode(Sandbox.self, from: data)
        }
    }

    /// The settings that make the development PKI in `layout` a configuration's only trust
    /// (environment names): its token-signing root, and its CA as the merchant certificates' issuer.
    /// The development token's environment has them from `dev-hsm init` on.
    public static func trustSettings(_ layout: Layout) -> [(String, String)] {
        let pki = layout.pkiDirectory
        typealias C = SettingCatalog
        return [
            (C.trustRoots, DevelopmentPKI.rootFile(in: pki)),
            (C.certificateIssuers, DevelopmentPKI.merchantCAFile(in: pki)),
        ].map { ($0.0.environmentName, $0.1) }
    }

    /// The rest a service needs to serve the sandbox (environment names), beside
    /// ``trustSettings(_:)``: the stand-ins' addresses and CA, notifications from loopback, and
    /// the organisation's cnpAPI merchantId.
    public func settings(_ layout: Layout) -> [(String, String)] {
        let pki = layout.pkiDirectory
        typealias C = SettingCatalog
        return [
            (C.applePayGateway, "https://localhost:\(appleGatewayPort)"),
            (C.applePayGatewayCA, DevelopmentPKI.serverCAFile(in: pki)),
            (C.merchantValidationHosts, "localhost:\(appleGatewayPort)"),
            (C.merchantTokenAllowedSources, "127.0.0.0/8"),
            (C.relayCnpUpstream, "https://localhost:\(processorPort)"),
            (C.relayCnpUpstreamCA, DevelopmentPKI.serverCAFile(in: pki)),
            (C.relayCnpMerchantIDs, "\(Self.organization)=\(Self.cnpMerchantID)"),
        ].map { ($0.0.environmentName, $0.1) }
    }
}
