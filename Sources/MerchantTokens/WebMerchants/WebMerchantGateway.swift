import OutboundTLS

/// What the web-merchant service asks of Apple's Web Merchant Registration API and of merchant
/// validation, with the platform integrator's identity key. ``AppleGatewayClient`` answers over
/// mutual TLS with the key in the HSM.
public protocol WebMerchantGateway: Sendable {
    func registerMerchant(_ request: RegisterMerchantRequest, integratorID: String) async throws(AppleGatewayError)
    func unregisterMerchant(_ request: UnregisterMerchantRequest, integratorID: String) async throws(AppleGatewayError)
    func merchantDetails(partnerInternalMerchantIdentifier: String, integratorID: String) async throws(AppleGatewayError)
        -> MerchantDetails
    func paymentSession(_ request: PaymentSessionRequest, integratorID: String) async throws(AppleGatewayError) -> [UInt8]
}

extension AppleGatewayClient: WebMerchantGateway {}
