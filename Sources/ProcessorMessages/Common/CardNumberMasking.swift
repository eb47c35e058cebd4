/// How account numbers are shown anywhere outside the forward itself: PCI DSS allows at most the
/// first six and last four digits. Every masking in this module goes through here.
public enum CardNumberMasking {
    /// First six and last four kept, the rest `*` (`411111******1111`). Numbers shorter than 13
    /// characters keep only their last four, so nothing shorter than a PAN exposes ten digits.
    public static func firstSixLastFour(_ number: String) -> String {
        let characters = Array(number)
        guard characters.count >= 13 else { return lastFour(number, mask: "*") }
        let hidden = characters.count - 10
        return String(characters.prefix(6)) + String(repeating: "*", count: hidden) + String(characters.suffix(4))
    }

    /// Everything but the last four replaced by `mask` (`XXXXXXXXXXXX1111`, MercuryPay's style).
    public static func lastFour(_ number: String, mask: Character = "X") -> String {
        let characters = Array(number)
        guard characters.count > 4 else { return String(repeating: mask, count: characters.count) }
        return String(repeating: mask, count: characters.count - 4) + String(characters.suffix(4))
    }

    /// True for a run of 12–19 digits: long enough to be a full account number.
    static func looksLikeAccountNumber(_ text: String) -> Bool {
        let trimmed = text.trimmingSpaces
        return (12...19).contains(trimmed.utf8.count) && trimmed.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// A value the upstream echoed, masked when it is (or contains) a full account number.
    static func maskedIfAccountNumber(_ text: String, accountNumber: String?) -> String {
        let trimmed = text.trimmingSpaces
        if let accountNumber, !accountNumber.isEmpty, trimmed.contains(accountNumber) {
            return text.replacingAll(accountNumber, with: firstSixLastFour(accountNumber))
        }
        return looksLikeAccountNumber(trimmed) ? firstSixLastFour(trimmed) : text
    }
}

extension String {
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars = scalars.dropFirst() }
        while let last = scalars.last, last.isWhitespace { scalars = scalars.dropLast() }
        return String(scalars)
    }

    /// Plain substring replacement without Foundation's locale-aware machinery.
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
