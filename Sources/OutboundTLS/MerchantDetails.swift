import Crypto
import Foundation

/// Apple's `MerchantDetails` (Get Merchant Details): no field is required, unknown fields (such as
/// the undocumented `delegatedCommerce`) are ignored, and each string is bounded and cleaned.
public struct MerchantDetails: Sendable, Hashable, Codable {
    public let partnerInternalMerchantIdentifier: String?
    public let partnerMerchantName: String?
    public let domainNames: [String]?
    /// Apple's SHA-256 of the `encryptTo` id it holds, hex (Apple writes it uppercase).
    public let encryptTo: String?
    public let partnerMerchantValidationURI: String?

    public init(
        partnerInternalMerchantIdentifier: String?, partnerMerchantName: String?, domainNames: [String]?, encryptTo: String?,
        partnerMerchantValidationURI: String?
    ) {
        self.partnerInternalMerchantIdentifier = partnerInternalMerchantIdentifier
        self.partnerMerchantName = partnerMerchantName
        self.domainNames = domainNames
        self.encryptTo = encryptTo
        self.partnerMerchantValidationURI = partnerMerchantValidationURI
    }

    /// Apple's answer; `responseInvalid` when it is not a JSON object or a known field has the wrong type.
    init(json: [UInt8]) throws(AppleGatewayError) {
        guard let object = CanonicalJSON.object(json) else {
            throw AppleGatewayError(.responseInvalid, "Apple's merchant details are not a JSON object", appleStatus: 200)
        }
        func text(_ key: String, limit: Int = 1024) throws(AppleGatewayError) -> String? {
            guard let value = object[key], !(value is NSNull) else { return nil }
            guard let string = value as? String else {
                throw AppleGatewayError(.responseInvalid, "Apple's merchant details: \(key) is not a string", appleStatus: 200)
            }
            return GatewayField.sanitized(string, limit: limit)
        }
        var domains: [String]?
        if let value = object["domainNames"], !(value is NSNull) {
            guard let list = value as? [Any], list.count <= 1000, let strings = list as? [String] else {
                throw AppleGatewayError(
                    .responseInvalid, "Apple's merchant details: domainNames is not a list of strings", appleStatus: 200)
            }
            domains = strings.map { GatewayField.sanitized($0, limit: 253) }
        }
        self.init(
            partnerInternalMerchantIdentifier: try text("partnerInternalMerchantIdentifier"),
            partnerMerchantName: try text("partnerMerchantName"),
            domainNames: domains, encryptTo: try text("encryptTo", limit: 128),
            partnerMerchantValidationURI: try text("partnerMerchantValidationURI"))
    }

    /// Apple's form of an `encryptTo` id: the uppercase hex SHA-256 of its UTF-8 bytes, unsalted.
    public static func encryptToHash(_ identifier: String) -> String {
        SHA256.hash(data: Data(identifier.utf8)).map { String(format: "%02X", $0) }.joined()
    }

    /// Whether Apple's `encryptTo` is the hash of `identifier` (hex compared case-insensitively);
    /// nil when Apple's details leave it out (Apple marks no field required).
    public func encryptToMatches(_ identifier: String) -> Bool? {
        guard let encryptTo else { return nil }
        return encryptTo.uppercased() == Self.encryptToHash(identifier)
    }
}
