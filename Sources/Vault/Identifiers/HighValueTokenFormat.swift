import PaywardenPrimitives

/// The OmniToken formats (Vantiv DOC-1583), both MOD 10+1 and keeping the account number's first
/// six and last four digits; the digits between are random.
public enum HighValueTokenFormat: String, Sendable, Hashable, CaseIterable, Codable {
    /// "Informative A1": the account number's length.
    case t = "T"
    /// "Minimum 16A 1": 16 digits for an account number of 16 or fewer, else its length.
    case d = "D"

    /// Account numbers the formats are defined for: the one rule, ``PrimaryAccountNumber/lengths``.
    public static let accountNumberLengths = PrimaryAccountNumber.lengths

    /// The token length for an account number of `length` digits.
    public func tokenLength(forAccountNumberLength length: Int) -> Int {
        switch self {
        case .t: length
        case .d: max(16, length)
        }
    }

    /// A new token for `accountNumber` (13–19 digits, checked by the caller): first six and last
    /// four kept, random digits between, the check digit placed so the Luhn sum is ≡ 1. The last
    /// four stay the last four because the check digit goes just before them.
    func generate(for accountNumber: [UInt8]) -> [UInt8] {
        let length = tokenLength(forAccountNumberLength: accountNumber.count)
        let middle = RandomDigits.draw(length - 6 - 4 - 1)
        let lastFour = Array(accountNumber.suffix(4))
        let head = Array(accountNumber.prefix(6)) + middle
        // The check digit sits before the last four, where it is doubled when the last four's count is even.
        for candidate in UInt8(0)...9 where Luhn.sum(head + [candidate] + lastFour) % 10 == 1 {
            return head + [candidate] + lastFour
        }
        preconditionFailure("a digit in an odd or even Luhn position takes every residue mod 10")
    }

    /// A new random token for `accountNumber`; nil unless it is 13 to 19 digits.
    public func newToken(for accountNumber: String) -> String? {
        guard let digits = Luhn.digits(accountNumber), Self.accountNumberLengths.contains(digits.count) else { return nil }
        return RandomDigits.string(generate(for: digits))
    }
}
