import Foundation
import PaywardenPrimitives
import PaywardenStorage

/// What the vault reads from a decrypted payload: the account number and its expiry (secrets
/// kept in ``Sensitive``), whether it is a merchant token, and what may be shown (BIN, last four,
/// network).
public struct AccountFacts: Sendable {
    public let accountNumber: Sensitive<String>
    /// `applicationExpirationDate`, YYMMDD as Apple sends it.
    public let expirationDate: String
    public let merchantTokenIdentifier: String?
    /// A merchant token's `merchantTokenMetadata` (card art, last four of the card, expiry),
    /// re-encoded with sorted keys; nil for a DPAN, or when absent or larger than 8 KiB.
    public let merchantTokenMetadata: [UInt8]?

    public var kind: TokenRecord.AccountKind { merchantTokenIdentifier == nil ? .devicePAN : .merchantPAN }
    public var firstSix: String { String(accountNumber.revealed.prefix(6)) }
    public var lastFour: String { String(accountNumber.revealed.suffix(4)) }
    public var network: CardNetwork { CardNetwork(bin: firstSix) }

    init(accountNumber: String, expirationDate: String, merchantTokenIdentifier: String?, merchantTokenMetadata: [UInt8]? = nil) {
        self.accountNumber = Sensitive(accountNumber, hint: "account number")
        self.expirationDate = expirationDate
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.merchantTokenMetadata = merchantTokenIdentifier == nil ? nil : merchantTokenMetadata
    }

    /// Reads the facts from Apple's decrypted JSON; `.invalidAccountNumber` when the account
    /// number is missing or not 13–19 digits (the message never holds it).
    public init(paymentData: [UInt8]) throws(VaultError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(paymentData)) as? [String: Any] else {
            throw VaultError(.invalidAccountNumber, "the decrypted payload is not a JSON object")
        }
        guard let number = object["applicationPrimaryAccountNumber"] as? String, let digits = Luhn.digits(number),
            HighValueTokenFormat.accountNumberLengths.contains(digits.count)
        else {
            throw VaultError(.invalidAccountNumber, "the payload's applicationPrimaryAccountNumber is missing or not 13 to 19 digits")
        }
        guard let expiry = object["applicationExpirationDate"] as? String, expiry.count == 6, Luhn.digits(expiry) != nil else {
            throw VaultError(.invalidAccountNumber, "the payload's applicationExpirationDate is missing or not YYMMDD")
        }
        let merchantToken = (object["merchantTokenIdentifier"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        self.init(
            accountNumber: number, expirationDate: expiry, merchantTokenIdentifier: merchantToken,
            merchantTokenMetadata: Self.metadata(object["merchantTokenMetadata"]))
    }

    /// The metadata object as canonical JSON, bounded so a payload cannot grow every token row.
    private static func metadata(_ value: Any?) -> [UInt8]? {
        guard let object = value as? [String: Any],
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]),
            data.count <= 8 * 1024
        else { return nil }
        return Array(data)
    }
}

extension TokenRecord.AccountKind {
    /// Visa stopped accepting device DPANs for recurring and card-on-file use on 30 July 2025;
    /// merchant tokens are made for it.
    public var recurringEligible: Bool { self == .merchantPAN }
}

/// The payment network by BIN, as eProtect's `type` names it (`VI MC AX DI JC DC`; `""` unknown).
public enum CardNetwork: String, Sendable, Hashable {
    case visa = "VI"
    case mastercard = "MC"
    case americanExpress = "AX"
    case discover = "DI"
    case jcb = "JC"
    case dinersClub = "DC"
    case unknown = ""

    public init(bin: String) {
        let two = Int(bin.prefix(2)) ?? -1
        let three = Int(bin.prefix(3)) ?? -1
        let four = Int(bin.prefix(4)) ?? -1
        let six = Int(bin.prefix(6)) ?? -1
        switch true {
        case bin.hasPrefix("4"): self = .visa
        case (51...55).contains(two), (222_100...272_099).contains(six): self = .mastercard
        case two == 34 || two == 37: self = .americanExpress
        case four == 6011, two == 65, (644...649).contains(three), (622_126...622_925).contains(six): self = .discover
        case (3528...3589).contains(four): self = .jcb
        case two == 36 || two == 38 || (300...305).contains(three): self = .dinersClub
        default: self = .unknown
        }
    }
}
