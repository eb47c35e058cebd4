import Crypto
import Foundation
import PaywardenPrimitives
import _CryptoExtras

/// A sample `PKPaymentToken` as an app hands it to its server: `paymentData` encrypted to a
/// merchant key (EC_v1 or RSA_v1) and signed by the development PKI's chain, with `paymentMethod`
/// and `transactionIdentifier` beside it. A service decrypts it only when it trusts that PKI.
public struct SampleToken: Sendable {
    /// The public half of the merchant key the token is encrypted to.
    public enum MerchantKey {
        case ec(P256.KeyAgreement.PublicKey)
        case rsa(_RSA.Encryption.PublicKey)
    }

    /// What the token carries.
    public struct Card: Sendable {
        /// The device account number (or the merchant token's account number).
        public var accountNumber: String
        /// Set: the payload is a merchant token's (Apple Pay merchant tokens), with this identifier.
        public var merchantTokenIdentifier: String?

        public init(accountNumber: String = SampleToken.randomAccountNumber(), merchantTokenIdentifier: String? = nil) {
            self.accountNumber = accountNumber
            self.merchantTokenIdentifier = merchantTokenIdentifier
        }
    }

    public let forge: TokenForge

    public init(pki: ApplePayTestPKI) {
        forge = TokenForge(pki: pki)
    }

    /// The token's JSON for `merchantID`'s `key`, whose certificate's public-key hash is `publicKeyHash`.
    public func make(merchantID: String, key: MerchantKey, publicKeyHash: String, card: Card = Card()) throws -> [UInt8] {
        let payload =
            card.merchantTokenIdentifier.map {
                PaymentPayloads.merchantToken(pan: card.accountNumber, merchantTokenIdentifier: $0)
            } ?? PaymentPayloads.threeDSecure(pan: card.accountNumber)
        var options = TokenForge.Options()
        options.applicationData = Array(SHA256.hash(data: Data(UUID().uuidString.utf8)))
        let paymentData: [UInt8]
        switch key {
        case .ec(let point):
            paymentData = try forge.ecV1(
                payload: payload, merchant: point, merchantIdentifierHash: TokenForge.merchantIdentifierHash(merchantID), options: options)
        case .rsa(let rsa):
            paymentData = try forge.rsaV1(payload: payload, merchant: rsa, options: options)
        }
        let data = try JSONSerialization.jsonObject(with: Data(try paymentData.withPublicKeyHash(publicKeyHash)))
        let token: [String: Any] = [
            "paymentData": data,
            "paymentMethod": ["displayName": "Visa \(card.accountNumber.suffix(4))", "network": "Visa", "type": "debit"],
            "transactionIdentifier": Hex.encode(options.transactionID).uppercased(),
        ]
        return Array(try JSONSerialization.data(withJSONObject: token, options: [.sortedKeys, .withoutEscapingSlashes]))
    }

    /// A random 16-digit Visa-range number with a valid Luhn check digit: a new card each time,
    /// so that a tour run again registers a card the vault has not seen.
    public static func randomAccountNumber() -> String {
        var digits = [4] + (0..<14).map { _ in Int.random(in: 0...9) }
        digits.append(luhnCheckDigit(digits))
        return digits.map(String.init).joined()
    }

    /// The digit that makes `digits` followed by it pass the Luhn check.
    static func luhnCheckDigit(_ digits: [Int]) -> Int {
        let sum = digits.reversed().enumerated().reduce(0) { total, element in
            let doubled = element.offset % 2 == 0 ? element.element * 2 : element.element
            return total + (doubled > 9 ? doubled - 9 : doubled)
        }
        return (10 - sum % 10) % 10
    }
}
