import ApplePay
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

    /// Reads the facts from Apple's decrypted JSON; `.invalidAccountNumber` when it is not a JSON
    /// object, or as ``init(payment:)``.
    public init(paymentData: [UInt8]) throws(VaultError) {
        try self.init(payment: DecryptedPayment(json: paymentData))
    }

    /// The facts of a payload already read; `.invalidAccountNumber` when it was not a JSON object,
    /// or the account number is missing or not of ``PrimaryAccountNumber/lengths`` (the message never
    /// holds it).
    public init(payment: DecryptedPayment?) throws(VaultError) {
        guard let payment else { throw VaultError(.invalidAccountNumber, "the decrypted payload is not a JSON object") }
        guard let number = payment.applicationPrimaryAccountNumber?.revealed, let digits = Luhn.digits(number),
            PrimaryAccountNumber.lengths.contains(digits.count)
        else {
            throw VaultError(
                .invalidAccountNumber,
                "the payload's applicationPrimaryAccountNumber is missing or not \(PrimaryAccountNumber.lengthsDescription) digits")
        }
        guard let expiry = payment.applicationExpirationDate, expiry.count == 6, Luhn.digits(expiry) != nil else {
            throw VaultError(.invalidAccountNumber, "the payload's applicationExpirationDate is missing or not YYMMDD")
        }
        // Canonical, and bounded so a payload cannot grow every token row.
        let metadata = payment.merchantTokenMetadata?.bytes
        self.init(
            accountNumber: number, expirationDate: expiry, merchantTokenIdentifier: payment.merchantTokenIdentifier,
            merchantTokenMetadata: metadata.flatMap { $0.count <= 8 * 1024 ? $0 : nil })
    }
}

extension TokenRecord.AccountKind {
    /// Visa stopped accepting device DPANs for recurring and card-on-file use on 30 July 2025;
    /// merchant tokens are made for it.
    public var recurringEligible: Bool { self == .merchantPAN }
}
