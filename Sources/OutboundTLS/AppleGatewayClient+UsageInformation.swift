import Foundation

/// Apple's Merchant Token Usage Information calls: Retrieve Merchant Token Public Key and Usage
/// Data Availability Notification, over mutual TLS with the merchant's identity key like every
/// merchant-token call (docs/usage-information.md).
extension AppleGatewayClient {
    /// How many times a call Apple answered with 5xx (or did not answer) is made in all.
    static let usageInformationAttempts = 3

    /// `POST …/merchantToken/publicKey`. 200: the device's key; 202: not yet. 409 ("Update the
    /// `tokenNotificationURL`") and 400/403/404 are refusals, 404 meaning Apple does not know the
    /// token; 5xx is retried a bounded number of times.
    public func merchantTokenPublicKey(
        merchantID: String, merchantTokenID: String
    ) async throws(AppleGatewayError) -> MerchantTokenPublicKeyAnswer {
        try Self.checkTokenIdentifier(merchantTokenID)
        let credential = try await identityCredential(for: merchantID)
        let url = try merchantTokenURL(merchantID, "publicKey")
        let body = CanonicalJSON.encode(["merchantTokenIdentifier": merchantTokenID])
        do {
            let answer = try await retryingUnavailable { () async throws(AppleGatewayError) in
                try await send(
                    .merchantTokenPublicKey, credential: credential, method: .POST, url: url, body: body,
                    expecting: [200], metadata: [:])
            }
            return try MerchantTokenPublicKeyAnswer.parse(answer)
        } catch  where error.appleStatus == 202 {
            return .notYetAvailable
        } catch  where error.appleStatus == 409 {
            throw AppleGatewayError(
                .appleRefused,
                "Apple reports a metadata conflict for the merchant token (HTTP 409): set its tokenNotificationURL "
                    + "(POST /v1/merchant-tokens/notification-url) and publish again", appleStatus: 409)
        }
    }

    /// `POST …/merchantToken/notify` with the sealed metadata. Apple's limits are checked first;
    /// 5xx is retried a bounded number of times, 4xx is final.
    public func notifyUsageDataAvailable(
        merchantID: String, merchantTokenID: String, metadata: [String: String]
    ) async throws(AppleGatewayError) {
        try Self.checkTokenIdentifier(merchantTokenID)
        let limits = [
            "ciphersuite": 64, "data": 4000, "ephemeralPublicKey": 256, "infoHash": 256, "merchantPublicKey": 256,
            "merchantTokenPublicKeyHash": 256,
        ]
        guard Set(metadata.keys) == Set(limits.keys) else {
            throw AppleGatewayError(.invalidRequest, "merchantTokenUsageMetadata must have exactly Apple's six fields")
        }
        for (field, limit) in limits.sorted(by: { $0.key < $1.key }) where metadata[field]!.isEmpty || metadata[field]!.count > limit {
            throw AppleGatewayError(.invalidRequest, "merchantTokenUsageMetadata.\(field) must be 1 to \(limit) characters")
        }
        let credential = try await identityCredential(for: merchantID)
        let url = try merchantTokenURL(merchantID, "notify")
        let body = CanonicalJSON.encode(["merchantTokenIdentifier": merchantTokenID, "merchantTokenUsageMetadata": metadata])
        _ = try await retryingUnavailable { () async throws(AppleGatewayError) in
            try await send(
                .usageDataNotification, credential: credential, method: .POST, url: url, body: body,
                expecting: [200, 204], metadata: [:])
        }
    }

    /// Runs `call` again after 5xx or no answer, with a doubling pause, up to the attempt limit.
    private func retryingUnavailable(
        _ call: () async throws(AppleGatewayError) -> [UInt8]
    ) async throws(AppleGatewayError) -> [UInt8] {
        var attempt = 1
        while true {
            do {
                return try await call()
            } catch  where error.code == .upstreamUnavailable && attempt < Self.usageInformationAttempts {
                try? await Task.sleep(for: .milliseconds(100 << attempt))
                attempt += 1
            }
        }
    }
}
