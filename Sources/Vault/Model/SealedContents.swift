import ApplePay
import Foundation

/// What a registration seals: the decrypted payload byte for byte, and the token's facts that the
/// redemption answer repeats.
struct RegistrationContents: Codable, Sendable {
    var paymentData: Data
    var version: String
    var transactionId: String
    var publicKeyHash: String
    var signingTime: Date
    var merchantKeyId: String
    var merchantIdentifierHash: String

    init(_ token: DecryptedPaymentToken) {
        paymentData = Data(token.paymentData)
        version = token.version.rawValue
        transactionId = token.transactionID
        publicKeyHash = token.publicKeyHash
        signingTime = token.signingTime
        merchantKeyId = token.keyID
        merchantIdentifierHash = token.merchantIdentifierHash
    }
}

/// What a high-value token seals: the account number with its expiry (Worldpay's tokens lose the
/// expiry otherwise), never a cryptogram.
struct TokenContents: Codable, Sendable {
    var accountNumber: String
    var expirationDate: String
}

enum SealedCoding {
    static func encode(_ value: some Encodable) throws(VaultError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw VaultError(.recordUnreadable, "a record could not be encoded")
        }
    }

    static func decode<Value: Decodable>(_ type: Value.Type, _ bytes: [UInt8]) throws(VaultError) -> Value {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        do {
            return try decoder.decode(type, from: Data(bytes))
        } catch {
            throw VaultError(.recordUnreadable, "a sealed record opened but its contents do not decode")
        }
    }
}
