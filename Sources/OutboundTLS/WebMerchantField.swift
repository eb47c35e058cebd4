import Crypto
import Foundation

/// The limits of Apple's Web Merchant Registration API (RegisterMerchantRequest,
/// UnregisterMerchantRequest, Get Merchant Details), checked before anything is sent.
public enum WebMerchantField {
    /// `partnerInternalMerchantIdentifier`: 3 to 1024 characters.
    public static let identifierLength = 3...1024
    /// `partnerMerchantName` and `reason`: at most 1024 characters.
    public static let textLength = 1...1024
    /// Domains per `partnerInternalMerchantIdentifier`, cumulative over every registration.
    public static let maximumDomains = 99
    /// Apple's character set for `partnerInternalMerchantIdentifier`: `a-zA-Z0-9~-_+&@$!|,.;`.
    public static let identifierPunctuation: Set<UInt8> = Set("~-_+&@$!|,.;".utf8)
    /// The same rule as a regular expression, as openapi.json states it.
    public static let identifierPattern = #"^[a-zA-Z0-9~\-_+&@$!|,.;]{3,1024}$"#

    public static func isPartnerIdentifier(_ value: String) -> Bool {
        identifierLength.contains(value.utf8.count)
            && value.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || identifierPunctuation.contains(byte)
            }
    }

    /// Free text Apple does not parse (`partnerMerchantName`, `reason`): 1 to 1024 characters,
    /// no control characters.
    public static func isText(_ value: String) -> Bool {
        textLength.contains(value.count) && !GatewayField.hasControlCharacters(value)
            && !value.trimmingCharacters(in: .whitespaces).isEmpty
    }

    /// A fully qualified domain name as Apple registers it: at least two DNS labels, lowercase,
    /// no scheme, port, path, wildcard or trailing dot, and not an IP address.
    public static func isDomainName(_ value: String) -> Bool {
        guard GatewayField.isDNSName(value), value == value.lowercased() else { return false }
        let labels = value.split(separator: ".")
        guard labels.count >= 2, let last = labels.last else { return false }
        // A top-level label of digits only is an IPv4 address, never a domain Apple can verify.
        return !last.allSatisfy(\.isNumber)
    }

    /// The identifier as one path segment: every byte outside RFC 3986's unreserved set
    /// (`|`, `&`, `$`, `;`, `+`, `@`, `!`, `,`) percent-encoded.
    public static func pathSegment(_ identifier: String) -> String {
        var unreserved = CharacterSet()
        unreserved.insert(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        return identifier.addingPercentEncoding(withAllowedCharacters: unreserved) ?? identifier
    }

    /// Domain checks shared by register and unregister: each valid, none twice. Names are
    /// compared as given: they must already be lowercase.
    static func checkDomains(_ domains: [String], field: String = "domainNames") throws(AppleGatewayError) {
        guard !domains.isEmpty else { throw AppleGatewayError(.invalidRequest, "\(field) must name at least one domain") }
        guard domains.count <= maximumDomains else {
            throw AppleGatewayError(.invalidRequest, "\(field) may name at most \(maximumDomains) domains")
        }
        var seen: Set<String> = []
        for domain in domains {
            guard isDomainName(domain) else {
                throw AppleGatewayError(
                    .invalidRequest,
                    "\(field): \"\(GatewayField.sanitized(domain, limit: 80))\" is not a fully qualified lowercase domain name "
                        + "(no scheme, port, path, wildcard or IP address)")
            }
            guard seen.insert(domain).inserted else {
                throw AppleGatewayError(.invalidRequest, "\(field) names \(domain) twice")
            }
        }
    }

    static func checkIdentifier(_ identifier: String) throws(AppleGatewayError) {
        guard isPartnerIdentifier(identifier) else {
            throw AppleGatewayError(
                .invalidRequest,
                "partnerInternalMerchantIdentifier must be 3 to 1024 characters from a-z A-Z 0-9 and ~ - _ + & @ $ ! | , . ;")
        }
    }
}

extension WebMerchantField {
    /// SHA-256 of `bytes`, lowercase hex: how a domain-verification file is recorded.
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}
