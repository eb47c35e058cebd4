import Crypto
import Foundation
import PKCS11

/// What an API key may do.
public enum APIScope: String, Sendable, Hashable, CaseIterable {
    case decrypt
    /// Registration IDs (eProtect-style), the next capability on the roadmap.
    case register
}

/// A configured API key: its name and the SHA-256 of the key (the key itself is never stored).
public struct APIKey: Sendable, Hashable {
    public let name: String
    public let hash: [UInt8]
    public let scopes: Set<APIScope>

    /// Parses `NAME:SHA256HEX:SCOPE[+SCOPE…]`.
    public init(entry: String) throws(ServerConfigurationError) {
        let parts = entry.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty else {
            throw ServerConfigurationError("API key entry \"\(entry.prefix(24))…\" is not NAME:SHA256HEX:SCOPE[+SCOPE]")
        }
        let hex = String(parts[1]).lowercased()
        guard hex.count == 64, let hash = KeyIdentifier(hex: hex)?.bytes else {
            throw ServerConfigurationError("API key \(parts[0]): the middle field must be the 64-hex-digit SHA-256 of the key, never the key itself")
        }
        var scopes: Set<APIScope> = []
        for scope in parts[2].split(separator: "+") {
            guard let known = APIScope(rawValue: String(scope)) else {
                throw ServerConfigurationError("API key \(parts[0]): unknown scope \"\(scope)\" (known: \(APIScope.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            scopes.insert(known)
        }
        guard !scopes.isEmpty else { throw ServerConfigurationError("API key \(parts[0]) has no scope") }
        self.name = String(parts[0])
        self.hash = hash
        self.scopes = scopes
    }

    /// A new random key and the configuration entry for it. The key is shown once; only its
    /// hash goes into the configuration.
    public static func generate(name: String, scopes: [APIScope]) -> (key: String, entry: String) {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let key = "pw_" + Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let hash = SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
        return (key, "\(name):\(hash):\(scopes.map(\.rawValue).joined(separator: "+"))")
    }
}

/// The configured API keys, checked in constant time.
public struct APIKeyRegistry: Sendable {
    public let keys: [APIKey]

    public init(keys: [APIKey]) {
        self.keys = keys
    }

    /// The key whose hash matches `presented`, comparing against every configured key in
    /// constant time so timing reveals neither which key matched nor how much of it.
    public func authenticate(_ presented: String) -> APIKey? {
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

public struct ServerConfigurationError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
