import OutboundTLS

/// Apple's usage-information calls, as the merchant-token service asks for them. Gateways that
/// do not speak them (the outbox's in-process test gateway) refuse.
public protocol UsageInformationGateway: Sendable {
    func merchantTokenPublicKey(merchantID: String, merchantTokenID: String) async throws(AppleGatewayError) -> MerchantTokenPublicKeyAnswer
    func notifyUsageDataAvailable(merchantID: String, merchantTokenID: String, metadata: [String: String]) async throws(AppleGatewayError)
}

extension AppleGatewayClient: UsageInformationGateway {}
