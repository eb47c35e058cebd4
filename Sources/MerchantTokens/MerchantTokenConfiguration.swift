import Foundation
import NIOSSL
import OutboundTLS
import PaywardenConfiguration
import PaywardenServices

/// The merchant-token settings checked and turned into what the service runs with: Apple's
/// gateway (URL, host allow-list, trust roots, timeout), who may notify, and the outbox's limits.
public struct MerchantTokenConfiguration: Sendable {
    public var gateway: AppleGatewayConfiguration
    /// Where a notification may come from (`PAYWARDEN_MERCHANT_TOKEN_ALLOWED_SOURCES`, Apple's ranges).
    public var allowedSources: [IPAddressBlock]
    public var eventPolicy: MerchantTokenEventPolicy
    public var pollInterval: Duration
    /// The platform integrator id for web merchants (``WebMerchantService``); nil: not configured.
    public var platformIntegratorID: String? = nil
    /// Where devices fetch usage-information packages (`PAYWARDEN_PUBLIC_URL`); nil: usage information is off.
    public var publicURL: String?

    public init(settings: MerchantTokenSettings) throws(ConfigurationError) {
        typealias C = SettingCatalog
        let hostPolicy: AppleGatewayHostPolicy
        do {
            hostPolicy = try AppleGatewayHostPolicy(patterns: settings.validationHosts)
        } catch {
            throw ConfigurationError("\(C.merchantValidationHosts.environmentName): \(error.message)")
        }
        guard let baseURL = URL(string: settings.gateway) else {
            throw ConfigurationError("\(C.applePayGateway.environmentName) is not a URL")
        }
        var roots: [NIOSSLCertificate] = []
        for path in settings.gatewayTrustRoots {
            do {
                roots += try NIOSSLCertificate.fromPEMFile(path)
            } catch {
                throw ConfigurationError("\(C.applePayGatewayCA.environmentName): \(path) holds no PEM certificate (\(error))")
            }
        }
        do {
            gateway = try AppleGatewayConfiguration(baseURL: baseURL, hostPolicy: hostPolicy, extraTrustRoots: roots)
        } catch {
            throw ConfigurationError(
                "\(C.applePayGateway.environmentName): \(error.message); its host must be on \(C.merchantValidationHosts.environmentName)")
        }
        gateway.requestTimeout = settings.gatewayTimeout
        allowedSources = try IPAddressBlock.blocks(settings.allowedSources, C.merchantTokenAllowedSources)
        eventPolicy = MerchantTokenEventPolicy(pendingLimit: settings.pendingLimit)
        pollInterval = settings.pollInterval
        platformIntegratorID = settings.platformIntegratorID
        publicURL = settings.publicURL
    }
}
