import OutboundTLS

/// What the merchant-token service asks of Apple: an event's details, an unlink, a notification
/// URL, a payment session. ``AppleGatewayClient`` answers over mutual TLS with the merchant's
/// identity key in the HSM; the outbox's own tests answer in process, so its state machine
/// (claim, fetch, apply, back off, give up) is tested without a socket.
public protocol MerchantTokenGateway: Sendable {
    func merchantTokenEvent(merchantID: String, eventID: String) async throws(AppleGatewayError) -> MerchantTokenEventDetails
    func unlink(merchantID: String, merchantTokenID: String) async throws(AppleGatewayError)
    func updateNotificationURL(merchantID: String, merchantTokenID: String, url: String) async throws(AppleGatewayError)
    func paymentSession(_ request: PaymentSessionRequest) async throws(AppleGatewayError) -> [UInt8]
    /// Releases the connections; the service calls it once, when it stops.
    func shutdown() async
}

extension AppleGatewayClient: MerchantTokenGateway {}
