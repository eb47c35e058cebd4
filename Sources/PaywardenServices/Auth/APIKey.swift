import Crypto
import Foundation
import PaywardenPrimitives

/// What an API key may do.
public enum APIScope: String, Sendable, Hashable, CaseIterable, Codable {
    /// `POST /v1/payment-tokens/decrypt` (and Radial's decrypt API).
    case decrypt
    /// Redeem registration IDs; the processor relay routes.
    case redeem
    /// Detokenize and delete high-value tokens.
    case detokenize
    /// Apple Pay on the web merchant validation.
    case session
    /// Merchant-token calls to Apple (unlink, update URL).
    case merchantTokens = "merchant-tokens"
    /// The platform integrator's web-merchant registrations with Apple.
    case platform
}

/// A configured API key: its name, the SHA-256 of the key (the key itself is never stored), its
/// scopes and the merchant organisation it acts for.
public struct APIKey: Sendable, Hashable {
    public let name: String
    let hash: [UInt8]
    public let scopes: Set<APIScope>
    /// The merchant organisation whose registrations and tokens the key may see; nil for keys
    /// that only decrypt.
    public let organization: OrganizationID?

    /// Parses `NAME:SHA256HEX:SCOPE[+SCOPE…][:ORGANIZATION]`. The error names the entry by its name
    /// only: the rest of a malformed entry might be a key pasted by mistake.
    public init(entry: String) throws(APIKeyEntryError) {
        let parts = entry.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (3...4).contains(parts.count), Self.isName(parts[0]) else {
            throw APIKeyEntryError("an entry is not NAME:SHA256HEX:SCOPE[+SCOPE…][:ORGANIZATION] (name letters, digits, - and _)")
        }
        let name = parts[0]
        guard parts[1].count == 64, let hash = Hex.decode(parts[1]) else {
            throw APIKeyEntryError("API key \(name): the second field must be the 64-hex-digit SHA-256 of the key, never the key itself")
        }
        var scopes: Set<APIScope> = []
        for scope in parts[2].split(separator: "+", omittingEmptySubsequences: false) {
            guard let known = APIScope(rawValue: String(scope)) else {
                throw APIKeyEntryError(
                    // Not echoed: a pasted key in the wrong field must not reach a log.
                    "API key \(name): the third field has an unknown scope "
                        + "(known: \(APIScope.allCases.map(\.rawValue).joined(separator: ", ")))"
                )
            }
            scopes.insert(known)
        }
        let organization = parts.count == 4 ? OrganizationID(parts[3]) : nil
        if let organization, !Self.isName(organization.rawValue) {
            throw APIKeyEntryError("API key \(name): the organisation must be letters, digits, - and _")
        }
        self.name = name
        self.hash = hash
        self.scopes = scopes
        self.organization = organization
    }

    /// Names and organisations: letters, digits, `-` and `_`, at most 64.
    public static func isName(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 64
            && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_") }
    }

    /// A new random key and the configuration entry for it. The key is shown once; only its
    /// hash goes into the configuration.
    public static func generate(name: String, scopes: [APIScope], organization: OrganizationID? = nil) -> (key: String, entry: String) {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let key =
            "pw_"
            + Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let hash = Hex.encode(SHA256.hash(data: Data(key.utf8)))
        let entry = "\(name):\(hash):\(scopes.map(\.rawValue).joined(separator: "+"))" + (organization.map { ":" + $0.rawValue } ?? "")
        return (key, entry)
    }
}

/// Why an API-key entry was refused.
public struct APIKeyEntryError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The configured API keys, checked in constant time.
public struct APIKeyRegistry: Sendable {
    public let keys: [APIKey]

    public init(keys: [APIKey]) {
        self.keys = keys
    }

    /// The key whose hash matches `presented`, comparing against every configured key in
    /// constant time so timing reveals neither which key matched nor how much of it.
    public func authenticate(_ presented: some StringProtocol) -> APIKey? {
        let digest = Array(SHA256.hash(data: Data(presented.utf8)))
        var match: APIKey?
        for key in keys {
            var difference: UInt8 = 0
            for index in 0..<32 { difference |= digest[index] ^ key.hash[index] }
            if difference == 0 { match = key }
        }
        return match
    }
}
