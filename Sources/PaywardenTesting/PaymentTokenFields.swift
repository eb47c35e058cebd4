import Foundation

/// An Apple Pay token's `paymentData` (JSON) taken apart, for the formats that carry its fields
/// one by one (cnpAPI's `<applepay>`, Radial's `DecryptBlobRequest` and wallet request).
public struct PaymentTokenFields: Sendable {
    public let data, ephemeralPublicKey, publicKeyHash, transactionId, signature, version: String

    public init(_ token: [UInt8]) throws {
        guard let object = try JSONSerialization.jsonObject(with: Data(token)) as? [String: Any],
            let header = object["header"] as? [String: Any], let data = object["data"] as? String,
            let signature = object["signature"] as? String, let version = object["version"] as? String,
            let ephemeralPublicKey = header["ephemeralPublicKey"] as? String, let publicKeyHash = header["publicKeyHash"] as? String,
            let transactionId = header["transactionId"] as? String
        else { throw CocoaError(.coderReadCorrupt) }
        (self.data, self.signature, self.version) = (data, signature, version)
        (self.ephemeralPublicKey, self.publicKeyHash, self.transactionId) = (ephemeralPublicKey, publicKeyHash, transactionId)
    }
}
