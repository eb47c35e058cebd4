import Crypto
import Foundation
import SwiftASN1
import X509

/// Apple's Web Merchant Registration API as the stand-in serves it (registerMerchant,
/// unregisterMerchant, merchant details) and merchant validation for registered merchants: every
/// field, limit and header checked, the client certificate required to be the platform
/// integrator's (a merchant's identity certificate gets Apple's 401), Apple's
/// `{statusMessage, statusCode}` refusals with an `x-keystone-correlationid`, and failures on demand.
extension AppleGatewayStandIn {
    /// What the stand-in holds for one registered merchant.
    public struct RegisteredWebMerchant: Sendable, Hashable {
        public var partnerMerchantName: String
        public var encryptTo: String
        public var merchantURL: String?
        public var domainNames: [String]
    }

    /// The stand-in's web-merchant state.
    struct WebMerchantRegistry: Sendable {
        var integratorID: String?
        var merchants: [String: RegisteredWebMerchant] = [:]
        var failures = (count: 0, status: 500)
        /// What registering a domain registered already answers (Apple's behaviour is unverified).
        var repeatStatus = 200
    }

    // MARK: Controls

    /// The platform integrator id whose identity certificate (subject `Merchant ID: ID`) may call.
    public func acceptPlatformIntegrator(_ id: String) {
        state.withLock { $0.webMerchants.integratorID = id }
    }

    /// The next `count` web-merchant calls get `status` (401, 417, 500, 400) in Apple's shape.
    public func failWebMerchantNext(_ count: Int, status: Int) {
        state.withLock { $0.webMerchants.failures = (count, status) }
    }

    /// Registering a domain registered already answers `status` (200 or 400).
    public func answerRepeatedRegistration(_ status: Int) {
        state.withLock { $0.webMerchants.repeatStatus = status }
    }

    /// What the stand-in holds for `identifier`, nil when it is not registered.
    public func registeredWebMerchant(_ identifier: String) -> RegisteredWebMerchant? {
        state.withLock { $0.webMerchants.merchants[identifier] }
    }

    /// The recorded web-merchant calls (register, unregister, details).
    public var webMerchantRequests: [RecordedRequest] {
        requests.filter { request in
            ["/paymentservices/registerMerchant", "/paymentservices/unregisterMerchant", "/paymentservices/merchant/"].contains {
                request.path.hasPrefix($0)
            }
        }
    }

    // MARK: Routes

    static let identifierCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789~-_+&@$!|,.;".utf8)

    /// The answer for a web-merchant route, or nil for the other routes.
    static func routeWebMerchant(_ request: RecordedRequest, registry: inout WebMerchantRegistry) -> StandInResponse? {
        let path = String(request.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0])
        let isSession = request.method == "POST" && ["/paymentservices/startSession", "/paymentservices/paymentSession"].contains(path)
        if isSession { return webMerchantSession(request, registry: registry) }
        let operation: String
        switch (request.method, path) {
        case ("POST", "/paymentservices/registerMerchant"): operation = "register"
        case ("POST", "/paymentservices/unregisterMerchant"): operation = "unregister"
        case ("GET", let other) where other.hasPrefix("/paymentservices/merchant/"): operation = "details"
        default: return nil
        }
        guard request.header("content-type")?.lowercased().hasPrefix("application/json") == true else {
            return appleError(400, "Content-Type must be application/json")
        }
        guard let id = request.header("x-request-id"), UUID(uuidString: id) != nil else {
            return appleError(400, "x-request-id must be a UUID")
        }
        guard let integrator = registry.integratorID, commonName(request.clientCertificateDER) == "Merchant ID: \(integrator)" else {
            return appleError(401, "Payment Services Exception Unauthorized")
        }
        if registry.failures.count > 0 {
            registry.failures.count -= 1
            let status = registry.failures.status
            let message =
                switch status {
                case 401: "Payment Services Exception Unauthorized"
                case 417: "Payment Services Exception Expectation Failed: platform not registered with Apple Developer"
                case 400: "Payment Services Exception Bad Request"
                default: "Payment Services Exception Internal Server Error"
                }
            return appleError(status, message)
        }
        switch operation {
        case "register": return register(request, registry: &registry)
        case "unregister": return unregister(request, registry: &registry)
        default:
            let encoded = String(path.dropFirst("/paymentservices/merchant/".count))
            // `|` and the other reserved characters must come percent-encoded.
            guard !encoded.contains("|"), let identifier = encoded.removingPercentEncoding, isIdentifier(identifier) else {
                return appleError(400, "Payment Services Exception Bad Request: malformed partnerInternalMerchantIdentifier")
            }
            guard let merchant = registry.merchants[identifier] else {
                return appleError(400, "Payment Services Exception Bad Request: merchant not registered")
            }
            let details: [String: Any] = [
                "partnerInternalMerchantIdentifier": identifier, "partnerMerchantName": merchant.partnerMerchantName,
                "domainNames": merchant.domainNames,
                "encryptTo": SHA256.hash(data: Data(merchant.encryptTo.utf8)).map { String(format: "%02X", $0) }.joined(),
                "partnerMerchantValidationURI": "/.well-known/apple-developer-merchantid-domain-association",
                "delegatedCommerce": ["enabled": true],
            ]
            return StandInResponse(status: 200, body: StandInResponse.encode(details), headers: [("Content-Type", "application/json")])
        }
    }

    private static func register(_ request: RecordedRequest, registry: inout WebMerchantRegistry) -> StandInResponse {
        let allowed: Set<String> = ["domainNames", "encryptTo", "partnerInternalMerchantIdentifier", "partnerMerchantName", "merchantUrl"]
        guard let body = request.jsonBody, Set(body.keys).isSubset(of: allowed) else { return appleError(400, "malformed request") }
        guard let identifier = body["partnerInternalMerchantIdentifier"] as? String, isIdentifier(identifier),
            let name = body["partnerMerchantName"] as? String, (1...1024).contains(name.count),
            let encryptTo = body["encryptTo"] as? String, !encryptTo.isEmpty,
            let domains = body["domainNames"] as? [String], !domains.isEmpty
        else { return appleError(400, "missing or invalid field") }
        if let url = body["merchantUrl"], !(url is String) { return appleError(400, "merchantUrl must be a string") }
        guard Set(domains).count == domains.count, domains.allSatisfy(isDomain) else {
            return appleError(400, "domainNames must be unique fully qualified domains")
        }
        var merchant =
            registry.merchants[identifier]
            ?? RegisteredWebMerchant(partnerMerchantName: name, encryptTo: encryptTo, merchantURL: nil, domainNames: [])
        let added = domains.filter { !merchant.domainNames.contains($0) }
        if added.count < domains.count && registry.repeatStatus != 200 {
            return appleError(registry.repeatStatus, "domain already registered")
        }
        guard merchant.domainNames.count + added.count <= 99 else {
            return appleError(400, "limited to 99 domain names per partnerInternalMerchantIdentifier")
        }
        merchant.domainNames += added
        merchant.partnerMerchantName = name
        merchant.encryptTo = encryptTo
        merchant.merchantURL = body["merchantUrl"] as? String
        registry.merchants[identifier] = merchant
        // Apple's 200 has no body.
        return StandInResponse(status: 200)
    }

    private static func unregister(_ request: RecordedRequest, registry: inout WebMerchantRegistry) -> StandInResponse {
        let allowed: Set<String> = ["domainNames", "partnerInternalMerchantIdentifier", "reason"]
        guard let body = request.jsonBody, Set(body.keys).isSubset(of: allowed),
            let identifier = body["partnerInternalMerchantIdentifier"] as? String, isIdentifier(identifier),
            let reason = body["reason"] as? String, (1...1024).contains(reason.count),
            let domains = body["domainNames"] as? [String], !domains.isEmpty, Set(domains).count == domains.count
        else { return appleError(400, "missing or invalid field") }
        guard var merchant = registry.merchants[identifier] else { return appleError(400, "merchant not registered") }
        guard domains.allSatisfy({ merchant.domainNames.contains($0) }) else { return appleError(400, "domain not registered") }
        merchant.domainNames.removeAll { domains.contains($0) }
        // No domain left: Apple deletes the registration.
        registry.merchants[identifier] = merchant.domainNames.isEmpty ? nil : merchant
        return StandInResponse(status: 200)
    }

    /// A session for a registered merchant needs the integrator's certificate and a registered
    /// domain; the integrator id itself as merchant gets Apple's "not registered for domain".
    private static func webMerchantSession(_ request: RecordedRequest, registry: WebMerchantRegistry) -> StandInResponse? {
        guard let integrator = registry.integratorID, let body = request.jsonBody,
            let merchantID = body["merchantIdentifier"] as? String, let context = body["initiativeContext"] as? String
        else { return nil }
        let fromIntegrator = commonName(request.clientCertificateDER) == "Merchant ID: \(integrator)"
        if merchantID == integrator {
            return appleError(400, "Payment Services Exception merchantId=\(integrator) not registered for domain=\(context)")
        }
        guard let merchant = registry.merchants[merchantID] else {
            guard fromIntegrator else { return nil }
            let hash = SHA256.hash(data: Data(merchantID.utf8)).map { String(format: "%02x", $0) }.joined()
            return appleError(
                417,
                "unauthorized to process transactions on behalf of merchantId=\(hash) reason=\(hash) is not a registered merchant "
                    + "in WWDR and isn't properly authorized via Mass Enablement, either")
        }
        guard fromIntegrator else { return appleError(401, "Payment Services Exception Unauthorized") }
        guard merchant.domainNames.contains(context) else {
            return appleError(400, "Payment Services Exception merchantId=\(merchantID) not registered for domain=\(context)")
        }
        // The registered merchant's session: the same shape as any other.
        return nil
    }

    static func isIdentifier(_ value: String) -> Bool {
        (3...1024).contains(value.utf8.count) && value.utf8.allSatisfy(identifierCharacters.contains)
    }

    static func isDomain(_ value: String) -> Bool {
        let labels = value.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && value.utf8.count <= 253
            && labels.allSatisfy { label in
                (1...63).contains(label.count) && label.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }
                    && !label.hasPrefix("-") && !label.hasSuffix("-")
            }
    }

    /// The client certificate's common name, or nil without one.
    static func commonName(_ der: [UInt8]?) -> String? {
        guard let der, let certificate = try? Certificate(derEncoded: der) else { return nil }
        for rdn in certificate.subject {
            for attribute in rdn where attribute.type == .RDNAttributeType.commonName {
                return String(describing: attribute.value)
            }
        }
        return nil
    }

    /// Apple's Web Merchant Registration error: `{statusMessage, statusCode}` (a string) with a
    /// correlation id header.
    static func appleError(_ status: Int, _ message: String) -> StandInResponse {
        StandInResponse(
            status: status, body: StandInResponse.encode(["statusMessage": message, "statusCode": "\(status)"]),
            headers: [("Content-Type", "application/json"), ("x-keystone-correlationid", UUID().uuidString.lowercased())])
    }
}
