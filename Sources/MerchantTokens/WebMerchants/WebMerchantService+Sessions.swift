import OutboundTLS
import PaywardenStorage

/// Merchant validation for a registered web merchant (Apple Pay on the web): the session is
/// requested with the platform integrator's identity key and the partner's identifier as
/// `merchantIdentifier`, and only for a domain registered for that merchant now.
extension WebMerchantService {
    /// Apple's session object for `request`, whose `merchantIdentifier` names a registered web
    /// merchant of the organisation. Refuses, before any call, an `initiativeContext` that is not
    /// one of its registered domains.
    public func paymentSession(_ request: PaymentSessionRequest, merchant record: WebMerchantRecord) async throws(MerchantTokenFailure)
        -> [UInt8]
    {
        let integrator = try requireIntegrator()
        guard record.state == .active, request.initiative == .web,
            record.domainNames.contains(request.initiativeContext.lowercased())
        else {
            let why =
                record.state != .active
                ? "web merchant \(record.id) has no registered domain (it was unregistered)"
                : request.initiative != .web
                    ? "a registered web merchant's sessions are for initiative web"
                    : "initiativeContext \(request.initiativeContext) is not a domain registered for web merchant \(record.id)"
            throw MerchantTokenFailure(.webMerchantDomainNotRegistered, why + "; register it with POST /v1/apple-pay/web-merchants")
        }
        do throws(AppleGatewayError) {
            // The domain as registered (lowercase), not as the caller wrote it.
            let registered = try PaymentSessionRequest(
                merchantIdentifier: request.merchantIdentifier, validationURL: request.validationURL, displayName: request.displayName,
                initiative: request.initiative.rawValue, initiativeContext: request.initiativeContext.lowercased())
            return try await gateway.paymentSession(registered, integratorID: integrator)
        } catch {
            throw MerchantTokenFailure(error)
        }
    }
}
