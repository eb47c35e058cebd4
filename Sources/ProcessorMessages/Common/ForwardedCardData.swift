import PaywardenPrimitives

/// The card data Paywarden substitutes into a message for the upstream: the account number (DPAN,
/// MPAN or a detokenized PAN), its expiry, and for a fresh Apple Pay payment the cryptogram and ECI.
///
/// It lives only for the duration of a forward. The account number and cryptogram are ``Sensitive``;
/// its `description`, `debugDescription` and mirror show the first six and last four digits and
/// never the cryptogram, so `print`, `dump`, string interpolation and logging frameworks that
/// reflect values cannot leak it.
public struct ForwardedCardData: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The full account number, of ``PrimaryAccountNumber/lengths``.
    public let accountNumber: Sensitive<String>
    /// Apple's `applicationExpirationDate`: YYMMDD.
    public let expirationYYMMDD: String
    /// Apple's `onlinePaymentCryptogram` (Base64); nil when forwarding a stored token, which has none.
    public let cryptogram: Sensitive<String>?
    /// Apple's `eciIndicator`, when Apple gave one.
    public let eci: String?
    /// The network, when known better than the BIN tells (for example from Apple's payment method).
    public private(set) var network: CardNetwork?

    public init(
        accountNumber: String,
        expirationYYMMDD: String,
        cryptogram: String? = nil,
        eci: String? = nil,
        network: CardNetwork? = nil
    ) throws(ProcessorMessageError) {
        let rules = FieldRules(format: .cardData)
        guard PrimaryAccountNumber.lengths.contains(accountNumber.utf8.count), accountNumber.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else {
            throw ProcessorMessageError(
                .cardData, .invalidCardData, field: "accountNumber",
                "accountNumber must be \(PrimaryAccountNumber.lengthsDescription) digits")
        }
        try rules.digits(expirationYYMMDD, "expirationYYMMDD", count: 6...6)
        let month = Int(expirationYYMMDD.dropFirst(2).prefix(2)) ?? 0
        guard (1...12).contains(month) else {
            throw ProcessorMessageError(.cardData, .invalidCardData, field: "expirationYYMMDD", "expirationYYMMDD has no valid month")
        }
        if let cryptogram {
            guard cryptogram.utf8.count <= 512, FieldRules.isBase64(cryptogram) else {
                throw ProcessorMessageError(
                    .cardData, .invalidCardData, field: "cryptogram", "cryptogram must be Base64, at most 512 characters")
            }
        }
        if let eci { try rules.digits(eci, "eci", count: 1...2) }
        self.accountNumber = Sensitive(accountNumber, hint: "account number")
        self.expirationYYMMDD = expirationYYMMDD
        self.cryptogram = cryptogram.map { Sensitive($0, hint: "cryptogram") }
        self.eci = eci
        self.network = network
    }

    /// The same card data, checked already, with `network` as the one known better than the BIN.
    public func naming(_ network: CardNetwork?) -> ForwardedCardData {
        var card = self
        card.network = network
        return card
    }

    /// The first six digits (the BIN).
    public var bin: String { String(accountNumber.revealed.prefix(6)) }
    public var lastFour: String { String(accountNumber.revealed.suffix(4)) }
    /// The network given, else the one the BIN implies.
    public var resolvedNetwork: CardNetwork? { network ?? CardNetwork(accountNumber: accountNumber.revealed) }
    /// `MMYY`, as cnpAPI `expDate` and MercuryPay `ExpDate` want it.
    public var expirationMMYY: String { String(expirationYYMMDD.dropFirst(2).prefix(2) + expirationYYMMDD.prefix(2)) }
    /// `YYYY-MM` (xs:gYearMonth), as Radial `ExpirationDate` wants it. Apple's two-digit year is 20YY.
    public var expirationYearMonth: String { "20\(expirationYYMMDD.prefix(2))-\(expirationYYMMDD.dropFirst(2).prefix(2))" }

    /// The account number as logs may show it.
    public var maskedAccountNumber: String { CardNumberMasking.firstSixLastFour(accountNumber.revealed) }

    public var description: String {
        var parts = ["account: \(maskedAccountNumber)", "expiration: <hidden>"]
        if let cryptogram { parts.append("cryptogram: <masked \(cryptogram.revealed.count) characters>") }
        if let eci { parts.append("eci: \(eci)") }
        if let network = resolvedNetwork { parts.append("network: \(network.rawValue)") }
        return "ForwardedCardData(\(parts.joined(separator: ", ")))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "accountNumber": maskedAccountNumber,
                "expirationYYMMDD": "<hidden>",
                "cryptogram": cryptogram.map { "<masked \($0.revealed.count) characters>" } as Any,
                "eci": eci as Any,
                "network": resolvedNetwork as Any,
            ], displayStyle: .struct)
    }
}
