import Crypto
import Foundation

/// What Apple's Retrieve Merchant Token Public Key answers: the key the token owner's device
/// made (200), or that it is not ready yet (202; Apple sends `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY`
/// when it is).
public enum MerchantTokenPublicKeyAnswer: Sendable, Hashable {
    /// The device's P-384 key (97 bytes, on the curve) and Apple's ciphersuite.
    case key(publicKey: [UInt8], ciphersuite: String)
    /// 202: wait for the `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY` event.
    case notYetAvailable

    /// Apple's `RetrieveMerchantTokenPublicKeyResponse`, checked: the suite must be the one
    /// Paywarden seals with, the key a valid uncompressed P-384 point.
    static func parse(_ body: [UInt8]) throws(AppleGatewayError) -> MerchantTokenPublicKeyAnswer {
        guard let object = CanonicalJSON.object(body) else {
            throw AppleGatewayError(.responseInvalid, "Apple's public-key answer is not a JSON object", appleStatus: 200)
        }
        guard let suite = object["supportedCiphersuite"] as? String, suite.count <= 64 else {
            throw AppleGatewayError(.responseInvalid, "Apple's public-key answer has no supportedCiphersuite", appleStatus: 200)
        }
        guard suite == "HPKE_AUTH_P384_SHA384_AES_GCM_256" else {
            throw AppleGatewayError(
                .responseInvalid,
                "Apple offers ciphersuite \"\(GatewayField.sanitized(suite, limit: 64))\", which Paywarden does not seal with",
                appleStatus: 200)
        }
        guard let encoded = object["merchantTokenPublicKey"] as? String, encoded.count <= 256, let key = Data(base64Encoded: encoded)
        else {
            throw AppleGatewayError(.responseInvalid, "Apple's merchantTokenPublicKey is missing or not Base64", appleStatus: 200)
        }
        guard key.count == 97, key.first == 0x04, (try? P384.KeyAgreement.PublicKey(x963Representation: key)) != nil else {
            throw AppleGatewayError(
                .responseInvalid, "Apple's merchantTokenPublicKey is not an uncompressed P-384 point (\(key.count) bytes)", appleStatus: 200
            )
        }
        return .key(publicKey: Array(key), ciphersuite: suite)
    }
}
