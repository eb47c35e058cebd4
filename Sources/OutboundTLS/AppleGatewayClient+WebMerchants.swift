import Foundation
import Logging
import NIOHTTP1

/// Apple's Web Merchant Registration API (docs/web-merchants.md): register, unregister and read a
/// web merchant, over mutual TLS with the platform integrator's identity key in the HSM. The
/// requests are checked when they are made; Apple's `{statusMessage, statusCode}` refusals become
/// errors that say what to fix, with Apple's correlation id when it sent one. A 5xx is retried a
/// bounded number of times (registering the same domains again is safe).
extension AppleGatewayClient {
    /// How many times a 5xx or an unanswered call is tried in all, and the first pause between tries.
    public static let webMerchantAttempts = 3
    static let webMerchantBackoff: Duration = .milliseconds(200)

    /// `POST /paymentservices/registerMerchant`: 200 with no body is success (the body is not parsed).
    public func registerMerchant(_ request: RegisterMerchantRequest, integratorID: String) async throws(AppleGatewayError) {
        _ = try await webMerchantCall(
            .registerMerchant, integratorID: integratorID, method: .POST, path: "/paymentservices/registerMerchant", body: request.body)
    }

    /// `POST /paymentservices/unregisterMerchant`.
    public func unregisterMerchant(_ request: UnregisterMerchantRequest, integratorID: String) async throws(AppleGatewayError) {
        _ = try await webMerchantCall(
            .unregisterMerchant, integratorID: integratorID, method: .POST, path: "/paymentservices/unregisterMerchant",
            body: request.body)
    }

    /// `GET /paymentservices/merchant/{partnerInternalMerchantIdentifier}`, the identifier percent-encoded.
    public func merchantDetails(partnerInternalMerchantIdentifier identifier: String, integratorID: String)
        async throws(AppleGatewayError) -> MerchantDetails
    {
        try WebMerchantField.checkIdentifier(identifier)
        let body = try await webMerchantCall(
            .merchantDetails, integratorID: integratorID, method: .GET,
            path: "/paymentservices/merchant/\(WebMerchantField.pathSegment(identifier))", body: nil)
        return try MerchantDetails(json: body)
    }

    /// Merchant validation for a registered web merchant: the session is requested with the
    /// integrator's identity certificate, `merchantIdentifier` being the partner's identifier.
    public func paymentSession(_ request: PaymentSessionRequest, integratorID: String) async throws(AppleGatewayError) -> [UInt8] {
        let endpoint = try configuration.hostPolicy.validationEndpoint(request.validationURL)
        let credential = try await identityCredential(for: integratorID)
        let answer = try await exchange(
            .paymentSession, credential: credential, method: .POST, url: endpoint.absoluteString, body: request.body, expecting: [200],
            metadata: ["host": "\(endpoint.host ?? "")", "web-merchant": "true"])
        guard answer.status == 200 else {
            throw Self.webMerchantError(status: answer.status, headers: answer.headers, body: answer.body, operation: .paymentSession)
        }
        guard CanonicalJSON.object(answer.body) != nil else {
            throw AppleGatewayError(.responseInvalid, "Apple's merchant session is not a JSON object", appleStatus: 200)
        }
        return answer.body
    }

    private func webMerchantCall(
        _ operation: Operation, integratorID: String, method: HTTPMethod, path: String, body: [UInt8]?
    ) async throws(AppleGatewayError) -> [UInt8] {
        let credential = try await identityCredential(for: integratorID)
        var pause = Self.webMerchantBackoff
        var attempt = 1
        while true {
            let failure: AppleGatewayError
            do throws(AppleGatewayError) {
                let answer = try await exchange(
                    operation, credential: credential, method: method, url: configuration.origin + path, body: body, expecting: [200],
                    metadata: ["attempt": "\(attempt)"])
                if answer.status == 200 { return answer.body }
                failure = Self.webMerchantError(status: answer.status, headers: answer.headers, body: answer.body, operation: operation)
            } catch {
                failure = error
            }
            guard failure.code == .upstreamUnavailable, attempt < Self.webMerchantAttempts else { throw failure }
            attempt += 1
            try? await Task.sleep(for: pause)
            pause *= 2
        }
    }

    /// Apple's status and `{statusMessage, statusCode}` → an error that says what to fix.
    static func webMerchantError(status: Int, headers: HTTPHeaders, body: [UInt8], operation: Operation) -> AppleGatewayError {
        var detail = ""
        if let object = CanonicalJSON.object(body) {
            if let message = object["statusMessage"] as? String, !message.isEmpty {
                detail += ": \"\(GatewayField.sanitized(message))\""
            } else if let message = object["errorMessage"] as? String, !message.isEmpty {
                detail += ": \"\(GatewayField.sanitized(message))\""
            }
        }
        if let correlation = headers.first(name: "x-keystone-correlationid"), !correlation.isEmpty {
            detail += " (Apple's correlation id \(GatewayField.sanitized(correlation, limit: 128)); quote it to Apple)"
        }
        switch status {
        case 400 where operation == .paymentSession, 417 where operation == .paymentSession:
            return AppleGatewayError(
                .appleRefused,
                "Apple refused the merchant session for the registered web merchant (HTTP \(status))\(detail); check that the "
                    + "registration is complete (`paywarden web-merchants show`)",
                appleStatus: status)
        case 401:
            let notRegistered =
                operation == .registerMerchant
                ? "" : " For an unregister or a look-up, Apple also answers 401 for an identifier it has not registered."
            return AppleGatewayError(
                .platformUnauthorized,
                "Apple refused the platform integrator (HTTP 401)\(detail). Check that Apple granted this integrator ID access to "
                    + "the Web Merchant Registration API, that PAYWARDEN_PLATFORM_INTEGRATOR_ID names it, and that its identity key's "
                    + "certificate is the platform integrator identity certificate Apple issued for it.\(notRegistered)",
                appleStatus: status)
        case 417:
            return AppleGatewayError(
                .platformNotRegistered,
                "Apple says the platform isn't registered with Apple Developer (HTTP 417)\(detail). Create the Payment Platform "
                    + "Integrator ID in the Apple Developer account (Identifiers), request its identity certificate from this key's CSR, "
                    + "and import it with `paywarden keys import-certificate`.",
                appleStatus: status)
        case 400:
            return AppleGatewayError(
                .appleRefused,
                "Apple refused the request as malformed or invalid, or the merchant isn't registered (HTTP 400)\(detail)",
                appleStatus: status)
        default:
            let mapped = error(status: status, body: body, operation: operation)
            return AppleGatewayError(mapped.code, mapped.message + detail, appleStatus: status)
        }
    }
}
